package web

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/auth"
	"github.com/gantry-dev/gantry/internal/catalog"
	"github.com/gantry-dev/gantry/internal/launch"
	"github.com/gantry-dev/gantry/internal/naming"
	"github.com/gantry-dev/gantry/internal/problem"
	"github.com/gantry-dev/gantry/views"
)

// launchForm shows the form generated from a template, with a fresh launch id.
// relaunchParam names the job whose launch the form is pre-filled from.
const relaunchParam = "relaunch"

func (h *handler) launchForm(c *gin.Context) {
	u, _ := auth.CurrentUser(c)
	t, err := h.Launcher.Template(c.Request.Context(), c.Param("template"), 0)
	if err != nil {
		h.fail(c, err)
		return
	}
	team := c.Query("team")
	if team == "" && len(u.Teams) > 0 {
		team = u.Teams[0].Team
	}
	values := t.Defaults()
	var from string
	var changes []string
	if name := c.Query(relaunchParam); name != "" {
		if values, changes, err = h.relaunchValues(c, t, team, name); err != nil {
			h.fail(c, err)
			return
		}
		from = name
	}
	p := launchFormProps(u, t, team, launch.NewLaunchID(), values, nil)
	p.RelaunchOf, p.Changes = from, changes
	h.render(c, http.StatusOK, views.LaunchFormPage(h.nav(c, "launch"), p))
}

// relaunchValues are the form's values to launch the job name of team
// again: the template's defaults, then the run's own parameters, then the
// suggested fix the relaunch link carries as a query value named after its
// field. changes says in words what differs from the run.
func (h *handler) relaunchValues(c *gin.Context, t catalog.Template, team, name string) (map[string]string, []string, error) {
	u, _ := auth.CurrentUser(c)
	if !canSeeTeam(u, team) {
		return nil, nil, errNotYourTeam
	}
	rec, err := h.Jobs.Record(c.Request.Context(), team, name)
	if err != nil {
		return nil, nil, fmt.Errorf("relaunch %s/%s: %w", team, name, err)
	}
	values := t.Defaults()
	var ran map[string]string
	if err := json.Unmarshal(rec.Parameters, &ran); err != nil {
		return nil, nil, fmt.Errorf("relaunch %s/%s: parameters: %w", team, name, err)
	}
	maps.Copy(values, ran)
	var changes []string
	for _, field := range slices.Sorted(maps.Keys(values)) {
		if v, ok := c.GetQuery(field); ok && field != naming.FieldTeam && v != values[field] {
			changes = append(changes, fmt.Sprintf("%s %s → %s", field, values[field], v))
			values[field] = v
		}
	}
	return values, changes, nil
}

// launchFormProps builds the form: one input per parameter the template
// offers, values as typed, errors next to their fields.
func launchFormProps(u *auth.User, t catalog.Template, team, launchID string, values map[string]string, errs problem.Fields) views.LaunchFormProps {
	p := views.LaunchFormProps{
		Template:  templateCard(t, teamNames(u)),
		Action:    "/launch/" + t.Name,
		LaunchID:  launchID,
		Team:      team,
		Error:     errs[""],
		TeamError: errs[naming.FieldTeam],
	}
	for _, m := range u.Teams {
		if t.AllowedFor(m.Team) {
			label := m.Team
			if m.DisplayName != "" {
				label = m.DisplayName + " (" + m.Team + ")"
			}
			p.Teams = append(p.Teams, views.Option{Value: m.Team, Label: label})
		}
	}
	if team != "" && !t.AllowedFor(team) || len(p.Teams) == 0 {
		p.Teams = append(p.Teams, views.Option{Value: team, Label: team})
	}
	pr := t.Parameters
	field := func(name, label, hint, typ string) views.FormField {
		return views.FormField{Name: name, Label: label, Hint: hint, Type: typ, Value: values[name], Error: errs[name]}
	}
	gpu := field(naming.FieldGPUType, "GPU type", "Which accelerator the job runs on; each is a node pool.", "select")
	for _, g := range t.GPUTypes {
		gpu.Options = append(gpu.Options, views.Option{Value: g.Name, Label: g.Label})
	}
	p.Fields = append(p.Fields, gpu,
		field(naming.FieldGPUs, "GPUs per pod", fmt.Sprintf("From %d to %d.", pr.GPUs.Min, pr.GPUs.Max), "number"),
		field(naming.FieldCPU, "CPU cores per pod", fmt.Sprintf("From %s to %s, for example 4 or 500m.", pr.CPU.Min, pr.CPU.Max), "text"),
		field(naming.FieldMemory, "Memory per pod", fmt.Sprintf("From %s to %s, for example 16Gi.", pr.Memory.Min, pr.Memory.Max), "text"),
	)
	if r := pr.Nodes; r != nil {
		p.Fields = append(p.Fields, field(naming.FieldNodes, "Nodes", fmt.Sprintf("From %d to %d; all start together.", r.Min, r.Max), "number"))
	}
	if r := pr.Replicas; r != nil {
		p.Fields = append(p.Fields, field(naming.FieldReplicas, "Replicas", fmt.Sprintf("From %d to %d; you can scale later.", r.Min, r.Max), "number"))
	}
	if r := pr.DurationMinutes; r != nil {
		p.Fields = append(p.Fields, field(naming.FieldDurationMinutes, "Time limit (minutes)", "The run is stopped after this long. At most "+strconv.Itoa(r.Max)+".", "number"))
	}
	for _, ch := range []struct {
		name, label string
		choices     []catalog.Choice
	}{
		{naming.FieldModel, "Model", pr.Models},
		{naming.FieldDataset, "Dataset", pr.Datasets},
		{naming.FieldCheckpoint, "Checkpoints", pr.Checkpoints},
	} {
		if len(ch.choices) == 0 {
			continue
		}
		f := field(ch.name, ch.label, "", "select")
		for _, c := range ch.choices {
			f.Options = append(f.Options, views.Option{Value: c.Name, Label: c.Label})
		}
		p.Fields = append(p.Fields, f)
	}
	if pr.Args != nil {
		p.Fields = append(p.Fields, field(naming.FieldArgs, "Arguments", "Passed to the container's command, on one line.", "text"))
	}
	return p
}
