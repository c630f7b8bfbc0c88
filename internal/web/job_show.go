package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"
	"golang.org/x/sync/errgroup"

	"github.com/gantry-dev/gantry/internal/auth"
	"github.com/gantry-dev/gantry/internal/catalog"
	"github.com/gantry-dev/gantry/internal/kube"
	"github.com/gantry-dev/gantry/internal/launch"
	"github.com/gantry-dev/gantry/internal/naming"
	"github.com/gantry-dev/gantry/internal/problem"
	"github.com/gantry-dev/gantry/internal/queue"
	"github.com/gantry-dev/gantry/internal/store"
	"github.com/gantry-dev/gantry/views"
)

// creatingGrace is how long after its launch a job missing from the cache
// counts as being created. Informers see new objects within a second or
// so; a record older than this whose objects are gone is a job that was
// deleted behind the portal's back, and answers 404.
const creatingGrace = 2 * time.Minute

// jobStatusOf reads a job's status from the cache. Right after a launch the
// cache may not have seen the new objects yet: the launch record (written
// only after the cluster accepted them) then stands in, as being created.
// A job deleted through the portal stays deleted, even while its objects
// are still going away.
func (h *handler) jobStatusOf(rec store.Launch) (launch.Status, error) {
	if launch.IsOutside(rec) {
		_, st, err := h.Jobs.Outside(rec.Team, rec.Name)
		return st, err
	}
	st, err := h.Jobs.Status(rec.Team, rec.Name, catalog.Kind(rec.Kind))
	switch {
	case rec.DeletedAt != nil && (err == nil || errors.Is(err, kube.ErrNotFound)):
		return deletedStatus(rec, st), nil
	case !errors.Is(err, kube.ErrNotFound) || h.Now().Sub(rec.CreatedAt) >= creatingGrace:
		return st, err
	}
	return creatingStatus(rec), nil
}

// deletedStatus is a job deleted through the portal: its launch record
// and, while they go away, its remaining pods.
func deletedStatus(rec store.Launch, st launch.Status) launch.Status {
	pods := st.Pods
	st = creatingStatus(rec)
	st.Phase, st.Message, st.Replicas, st.Pods = queue.PhaseDeleted, "", 0, pods
	return st
}

// deletion is who deleted the job and when; nil if it was not deleted
// through the portal.
func deletion(rec store.Launch) *queue.Cause {
	if rec.DeletedAt == nil {
		return nil
	}
	by := ""
	if rec.DeletedBy != nil {
		by = *rec.DeletedBy
	}
	return queue.DeletedCause(by, *rec.DeletedAt)
}

// creatingStatus is what the launch record says of a job being created.
func creatingStatus(rec store.Launch) launch.Status {
	st := launch.Status{Name: rec.Name, Namespace: rec.Namespace, Team: rec.Team, Owner: rec.Owner, Template: rec.Template,
		Version: strconv.Itoa(rec.TemplateVersion), Kind: catalog.Kind(rec.Kind), Phase: queue.PhaseCreating,
		Message: "Kubernetes accepted the job moments ago; its status appears here in a few seconds.", Replicas: 1}
	var params map[string]string
	_ = json.Unmarshal(rec.Parameters, &params)
	for _, field := range []string{naming.FieldReplicas, naming.FieldNodes} {
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

// readJobTogether has the request's reads of rec's own rows in PostgreSQL
// (its ended runs, moments, idle episode, verdict) answered from the rows
// kept of the job, or else from one round trip (store.ReadJobTogether). For
// reads only: a request that writes any of them must not read them after.
// The job's page, its status fragment (which an open page polls) and the
// API's reads of one job use it.
func (h *handler) readJobTogether(c *gin.Context, rec store.Launch) {
	if h.Store != nil {
		c.Request = c.Request.WithContext(h.Store.ReadJobTogether(c.Request.Context(), rec.Namespace, rec.Name))
	}
}

// jobShow is a job's page: its one status panel, how to reach it,
// actions, parameters and the link to its rendered manifest (jobManifest).
//
// Its parts after the launch record (status panel, verdict and access,
// idle reclaim, attempts, the frame's badges) read PostgreSQL and
// Prometheus independently, so they are read at once: the page waits for
// its slowest part, not for the sum of a dozen round trips, each of which
// may wait for a core on a busy machine. Those of them that are the job's
// own rows in PostgreSQL are kept in memory, or else one round trip
// (store.ReadJobTogether).
func (h *handler) jobShow(c *gin.Context) {
	rec, st, err := h.jobWithStatus(c)
	if err != nil {
		h.fail(c, err)
		return
	}
	h.readJobTogether(c, rec)
	ctx := c.Request.Context()
	u, _ := auth.CurrentUser(c)
	var (
		g        errgroup.Group
		panel    views.JobStatusPanel
		p        views.JobProps
		idle     *views.JobIdleProps
		attempts []queue.Attempt
		pending  int
		unread   int
	)
	g.Go(func() error {
		pending, unread = h.navBadges(c, u)
		return nil
	})
	g.Go(func() (err error) {
		panel, err = h.jobPanel(c, rec, st)
		return err
	})
	g.Go(func() error {
		p = h.jobProps(c, rec, st, views.JobStatusPanel{})
		return nil
	})
	var access views.JobProps
	g.Go(func() error { return h.accessPanels(c, rec, st, &access, "") })
	g.Go(func() (err error) {
		idle, err = h.idleProps(ctx, u, rec, st.Phase)
		return err
	})
	g.Go(func() (err error) {
		attempts, err = h.jobAttempts(ctx, rec.Namespace, rec.Name)
		return err
	})
	if err := g.Wait(); err != nil {
		h.fail(c, err)
		return
	}
	p.Status, p.Idle, p.Open, p.Endpoint = panel, idle, access.Open, access.Endpoint
	p.Attempts = jobAttemptsView(attempts, h.Attempts != nil)
	h.render(c, http.StatusOK, views.JobPage(h.navCounted(c, "jobs", pending, unread), p))
}

// jobStatusFragment is the job's status panel alone, for the refresh script.
func (h *handler) jobStatusFragment(c *gin.Context) {
	rec, st, err := h.jobWithStatus(c)
	if err != nil {
		h.fail(c, err)
		return
	}
	h.readJobTogether(c, rec)
	panel, err := h.jobPanel(c, rec, st)
	if err != nil {
		h.fail(c, err)
		return
	}
	panel.Stale = h.staleBanner()
	h.render(c, http.StatusOK, views.JobStatusFragment(panel))
}

// jobPanel is the job's one status panel: the phase and pods from the job
// cache, and, with the status service, why it waits or ended, what it was
// given, its GPU use and cost. Both read the phase from queue.PhaseOf.
func (h *handler) jobPanel(c *gin.Context, rec store.Launch, st launch.Status) (views.JobStatusPanel, error) {
	p := views.JobStatusPanel{URL: jobURL(rec.Team, rec.Name) + "/status"}
	if h.Status != nil && st.Phase != queue.PhaseCreating {
		u, _ := auth.CurrentUser(c)
		q, err := h.jobQueueWithin(c.Request.Context(), rec, h.failureLogTail(u), h.Status.GPUWait)
		if err != nil {
			return p, err
		}
		p = jobQueueProps(q)
		if g := p.GPU; h.jobGPU != nil && g != nil {
			outcome := "shown"
			switch {
			case g.Pending:
				outcome = "pending"
			case g.ChartPending:
				outcome = "chart_pending"
			case g.AsOf != "":
				outcome = "earlier"
			}
			h.jobGPU.WithLabelValues(outcome).Inc()
		}
		p.Cause = causeView(rec, q.Status.Cause)
	} else {
		p.Phase = string(st.Phase)
	}
	// Ended follows the phase the panel shows, which the queue's read may
	// have set from a newer status than st.
	p.Message, p.Ended = st.Message, queue.Phase(p.Phase).Ended()
	p.Replicas, p.ReadyReplicas = st.Replicas, st.ReadyReplicas
	for _, pod := range st.Pods {
		p.Pods = append(p.Pods, views.JobPod{Name: pod.Name, Phase: pod.Phase, Node: pod.Node, Pool: pod.Pool})
	}
	return p, nil
}

// causeView puts a cause on the page, with the relaunch link that carries
// its fix.
func causeView(rec store.Launch, c *queue.Cause) *views.CauseView {
	if c == nil {
		return nil
	}
	v := &views.CauseView{Kind: string(c.Kind), Words: c.Words, Next: c.Next, LogTail: c.LogTail, LogTailNote: c.LogTailNote}
	if launch.IsOutside(rec) {
		return v // no launch record to relaunch from
	}
	if c.Fix != nil {
		v.Fix = c.Fix.Words
	}
	if !c.Requeued {
		v.RelaunchURL = relaunchURL(rec, c.Fix)
	}
	return v
}

// relaunchURL opens the launch form pre-filled from the launch record of
// rec, with the fix's field set to its new value.
func relaunchURL(rec store.Launch, fix *queue.Fix) string {
	q := url.Values{}
	q.Set("team", rec.Team)
	q.Set(relaunchParam, rec.Name)
	if fix != nil {
		q.Set(fix.Field, fix.Value)
	}
	return "/launch/" + url.PathEscape(rec.Template) + "?" + q.Encode()
}

func (h *handler) jobProps(c *gin.Context, rec store.Launch, st launch.Status, panel views.JobStatusPanel) views.JobProps {
	base := jobURL(rec.Team, rec.Name)
	p := views.JobProps{
		Team: rec.Team, Name: rec.Name, Kind: rec.Kind, Owner: rec.Owner, Template: rec.Template, Version: rec.TemplateVersion,
		Pool: st.Pool, Namespace: rec.Namespace, Status: panel,
	}
	if launch.IsOutside(rec) {
		p.Outside = true // nothing to relaunch, stop or delete from here
		return p
	}
	p.ManifestURL = base + "/manifest"
	// The verdict and the template are independent reads.
	verdict := make(chan *views.VerdictProps, 1)
	go func() { verdict <- h.verdictProps(c, rec) }()
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
	if kind == catalog.KindNotebook && st.Phase != queue.PhaseDeleted {
		if st.Phase == queue.PhaseStopped {
			p.Actions = append(p.Actions, views.JobAction{Label: "Resume", URL: base + "/resume", TestID: "resume"})
		} else {
			p.Actions = append(p.Actions, views.JobAction{Label: "Stop (keeps the workspace)", URL: base + "/stop", TestID: "stop"})
		}
	}
	if st.Phase != queue.PhaseDeleted {
		p.Actions = append(p.Actions, views.JobAction{Label: "Delete", URL: base + "/delete", TestID: "delete", Danger: true})
	}
	p.Verdict = <-verdict
	return p
}

// errNoManifest answers the manifest page of a workload made outside the
// portal.
var errNoManifest = problem.New("workload made outside the portal has no launch manifest", problem.Problem{Kind: problem.NotFound,
	Title: "No manifest", Detail: "This workload was made outside the portal (with kubectl, say): no launch rendered a manifest for it."})

// jobManifest is the page of the manifest a job's launch applied. It is a
// page of its own, not a part of the job's: the records a replica keeps
// leave manifests out (launch.KeptRecords), so showing it on the job's
// page made every view of it read PostgreSQL.
func (h *handler) jobManifest(c *gin.Context) {
	_, rec, err := h.jobRecord(c)
	if err != nil {
		h.fail(c, err)
		return
	}
	if launch.IsOutside(rec) {
		h.fail(c, errNoManifest)
		return
	}
	manifest := rec.Manifest
	if manifest == "" {
		if manifest, err = h.Jobs.Manifest(c.Request.Context(), rec.Team, rec.Name); err != nil {
			h.fail(c, err)
			return
		}
	}
	h.render(c, http.StatusOK, views.JobManifestPage(h.nav(c, "jobs"), views.JobManifestProps{Name: rec.Name, JobURL: jobURL(rec.Team, rec.Name),
		Template: rec.Template, Version: rec.TemplateVersion, Manifest: manifest}))
}
