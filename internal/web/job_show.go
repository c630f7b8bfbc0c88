package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/catalog"
	"github.com/gantry-dev/gantry/internal/kube"
	"github.com/gantry-dev/gantry/internal/launch"
	"github.com/gantry-dev/gantry/internal/store"
	"github.com/gantry-dev/gantry/views"
)

// phaseCreating is the phase of a job whose objects the cluster accepted
// but the informer cache has not seen yet.
const phaseCreating = "creating"

// creatingGrace is how long after its launch a job missing from the cache
// counts as being created. Informers see new objects within a second or
// so; a record older than this whose objects are gone is a job that was
// deleted behind the portal's back, and answers 404.
const creatingGrace = 2 * time.Minute

// jobStatusOf reads a job's status from the cache. Right after a launch the
// cache may not have seen the new objects yet: the launch record (written
// only after the cluster accepted them) then stands in, as being created.
func (h *handler) jobStatusOf(rec store.Launch) (launch.Status, error) {
	st, err := h.Jobs.Status(rec.Team, rec.Name, catalog.Kind(rec.Kind))
	if !errors.Is(err, kube.ErrNotFound) || rec.DeletedAt != nil || h.Now().Sub(rec.CreatedAt) >= creatingGrace {
		return st, err
	}
	return creatingStatus(rec), nil
}

// creatingStatus is what the launch record says of a job being created.
func creatingStatus(rec store.Launch) launch.Status {
	st := launch.Status{Name: rec.Name, Namespace: rec.Namespace, Team: rec.Team, Owner: rec.Owner, Template: rec.Template,
		Version: strconv.Itoa(rec.TemplateVersion), Kind: catalog.Kind(rec.Kind), Phase: phaseCreating,
		Message: "Kubernetes accepted the job moments ago; its status appears here in a few seconds.", Replicas: 1}
	var params map[string]string
	_ = json.Unmarshal(rec.Parameters, &params)
	for _, field := range []string{catalog.FieldReplicas, catalog.FieldNodes} {
		if n, err := strconv.Atoi(params[field]); err == nil && n >= 0 {
			st.Replicas = int32(n)
			break
		}
	}
	return st
}

// jobWithStatus reads the job the request names (if the user may see it)
// and its status.
func (h *handler) jobWithStatus(c *gin.Context) (store.Launch, launch.Status, error) {
	_, rec, err := h.jobRecord(c)
	if err != nil {
		return rec, launch.Status{}, err
	}
	st, err := h.jobStatusOf(rec)
	return rec, st, err
}

// jobShow is a job's page: status from the cluster cache, how to reach it,
// actions, parameters and the rendered manifest.
func (h *handler) jobShow(c *gin.Context) {
	rec, st, err := h.jobWithStatus(c)
	if err != nil {
		h.fail(c, err)
		return
	}
	p := h.jobProps(c, rec, st)
	if h.Status != nil {
		q, err := h.jobQueueOf(c.Request.Context(), rec)
		if err != nil {
			h.fail(c, err)
			return
		}
		qp := jobQueueProps(q)
		p.Queue = &qp
	}
	h.render(c, http.StatusOK, views.JobPage(h.nav(c, "jobs"), p))
}

// jobStatusFragment is the status part of the job page, for the refresh script.
func (h *handler) jobStatusFragment(c *gin.Context) {
	rec, st, err := h.jobWithStatus(c)
	if err != nil {
		h.fail(c, err)
		return
	}
	h.render(c, http.StatusOK, views.JobStatusFragment(jobStatusProps(rec, st)))
}

func jobStatusProps(rec store.Launch, st launch.Status) views.JobStatus {
	s := views.JobStatus{Phase: st.Phase, Message: st.Message, Replicas: st.Replicas, ReadyReplicas: st.ReadyReplicas,
		URL: jobURL(rec.Team, rec.Name) + "/status"}
	for _, p := range st.Pods {
		s.Pods = append(s.Pods, views.JobPod{Name: p.Name, Phase: p.Phase, Node: p.Node, Pool: p.Pool})
	}
	return s
}

func (h *handler) jobProps(c *gin.Context, rec store.Launch, st launch.Status) views.JobProps {
	base := jobURL(rec.Team, rec.Name)
	p := views.JobProps{
		Team: rec.Team, Name: rec.Name, Kind: rec.Kind, Owner: rec.Owner, Template: rec.Template, Version: rec.TemplateVersion,
		Pool: st.Pool, Namespace: rec.Namespace, Status: jobStatusProps(rec, st), Manifest: rec.Manifest,
	}
	var params map[string]string
	if err := json.Unmarshal(rec.Parameters, &params); err == nil {
		for _, k := range slices.Sorted(maps.Keys(params)) {
			p.Parameters = append(p.Parameters, views.Option{Value: k, Label: params[k]})
		}
	}
	kind := catalog.Kind(rec.Kind)
	if kind == catalog.KindNotebook || kind == catalog.KindInference {
		t, err := h.Launcher.Template(c.Request.Context(), rec.Template, rec.TemplateVersion)
		if err == nil && t.Port != 0 {
			p.ServiceDNS = fmt.Sprintf("%s.%s.svc.cluster.local:%d", rec.Name, rec.Namespace, t.Port)
			p.PortForward = fmt.Sprintf("kubectl -n %s port-forward service/%s %d:%d", rec.Namespace, rec.Name, t.Port, t.Port)
			p.LocalURL = fmt.Sprintf("http://localhost:%d/", t.Port)
			if kind == catalog.KindInference && t.Parameters.Replicas != nil {
				p.Scale = &views.ScaleForm{URL: base + "/scale", Min: t.Parameters.Replicas.Min, Max: t.Parameters.Replicas.Max, Replicas: int(st.Replicas)}
			}
		}
	}
	if kind == catalog.KindNotebook {
		if st.Phase == launch.PhaseStopped {
			p.Actions = append(p.Actions, views.JobAction{Label: "Resume", URL: base + "/resume", TestID: "resume"})
		} else {
			p.Actions = append(p.Actions, views.JobAction{Label: "Stop (keeps the workspace)", URL: base + "/stop", TestID: "stop"})
		}
	}
	p.Actions = append(p.Actions, views.JobAction{Label: "Delete", URL: base + "/delete", TestID: "delete", Danger: true})
	return p
}
