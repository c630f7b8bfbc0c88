package acceptance

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/gantry-dev/gantry/internal/audit"
	"github.com/gantry-dev/gantry/internal/catalog"
	"github.com/gantry-dev/gantry/internal/gpu"
	"github.com/gantry-dev/gantry/internal/identity"
	"github.com/gantry-dev/gantry/internal/kube"
	"github.com/gantry-dev/gantry/internal/launch"
	"github.com/gantry-dev/gantry/internal/money"
	"github.com/gantry-dev/gantry/internal/naming"
	"github.com/gantry-dev/gantry/internal/problem"
	"github.com/gantry-dev/gantry/internal/store"
)

// Audit actions of acceptance runs.
const (
	ActionDefinitionSave = "acceptance.definition.save"
	ActionRunStart       = "acceptance.run.start"
	ActionPodDelete      = "acceptance.pod.delete"
	ActionRunFinish      = "acceptance.run.finish"
)

// RunStore is what the runner needs from the database.
type RunStore interface {
	RunningAcceptanceRuns(ctx context.Context) ([]store.AcceptanceRun, error)
	AcceptanceRun(ctx context.Context, id int64) (store.AcceptanceRun, error)
	UpdateAcceptanceRunAudited(ctx context.Context, r store.AcceptanceRun, e *store.AuditEntry) (store.AcceptanceRun, error)
	JobRuns(ctx context.Context, namespace, job string) ([]store.LedgerRow, error)
	PriceAt(ctx context.Context, flavor, resource string, t time.Time) (store.GPUPrice, error)
}

// Launcher is the normal launch path (a *launch.Service).
type Launcher interface {
	Template(ctx context.Context, name string, version int) (catalog.Template, error)
	Launch(ctx context.Context, actor launch.Actor, req launch.Request) (launch.Result, error)
}

// Cluster reads the run's job, pods and Workload from the informer caches
// (a *kube.JobCache).
type Cluster interface {
	Job(namespace, name string) (*batchv1.Job, error)
	Pods(namespace, instance string) ([]*corev1.Pod, error)
	WorkloadsOwnedBy(namespace, kind, name string) ([]*kueue.Workload, error)
}

// LogReader opens a container's log as a person (a *kube.PodLogs).
type LogReader interface {
	Open(ctx context.Context, username string, groups []string, req kube.LogRequest) (io.ReadCloser, error)
}

// GPUMetrics finds a job's DCGM samples in Prometheus (a *gpu.Metrics).
type GPUMetrics interface {
	AverageUtilization(ctx context.Context, j gpu.Job, start, end time.Time) (float64, bool, error)
}

// Runner drives running acceptance runs one step at a time. Every change
// is written with a compare-and-set on the run's version before the next
// action, so a runner that loses the lead, or a restarted portal, leaves
// the run where another runner picks it up without repeating a step.
type Runner struct {
	Store    RunStore
	Launcher Launcher
	Cluster  Cluster
	Logs     LogReader
	// GPU may be nil: step 6 then says GPU metrics were not checked.
	GPU GPUMetrics
	// Base and Identities make the clients that act as the run's starter:
	// step 5's pod deletion goes to the API server as them.
	Base       *rest.Config
	Identities identity.Prefixes
	Audit      *audit.Log
	Log        *slog.Logger
	// StepTimeout bounds how long a step waits for the workload; zero is 15 minutes.
	StepTimeout time.Duration
	Now         func() time.Time
}

func (r *Runner) now() time.Time {
	if r.Now == nil {
		return time.Now().UTC()
	}
	return r.Now().UTC()
}

func (r *Runner) stepTimeout() time.Duration {
	if r.StepTimeout <= 0 {
		return 15 * time.Minute
	}
	return r.StepTimeout
}

// Run advances every running run each interval until ctx ends.
func (r *Runner) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		r.Tick(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Tick advances each running run as far as it can go now.
func (r *Runner) Tick(ctx context.Context) {
	runs, err := r.Store.RunningAcceptanceRuns(ctx)
	if err != nil {
		if ctx.Err() == nil {
			r.Log.Warn("acceptance runs: list running", "err", err)
		}
		return
	}
	for _, row := range runs {
		if err := r.Advance(ctx, row); err != nil && ctx.Err() == nil {
			if errors.Is(err, store.ErrStale) {
				continue
			}
			r.Log.Warn("acceptance run: step not finished", "run", row.ID, "step", row.Step, "err", err)
		}
	}
}

// Advance takes the run through as many steps as are ready.
func (r *Runner) Advance(ctx context.Context, row store.AcceptanceRun) error {
	w, err := decode(row)
	if err != nil {
		return err
	}
	for w.row.Status == string(StatusRunning) {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		progressed, err := r.advance(ctx, w)
		if err != nil {
			return err
		}
		if !progressed {
			return nil
		}
	}
	return nil
}

// save writes w if nobody else changed the run since it was read.
func (r *Runner) save(ctx context.Context, w *work) error {
	return r.saveAudited(ctx, w, nil)
}

// saveAudited is save that appends entry in the same transaction.
func (r *Runner) saveAudited(ctx context.Context, w *work, entry *store.AuditEntry) error {
	row, err := w.encode()
	if err != nil {
		return err
	}
	saved, err := r.Store.UpdateAcceptanceRunAudited(ctx, row, entry)
	if err != nil {
		return err
	}
	w.row = saved
	return nil
}

// advance works on the current step; it reports true when the run moved on.
func (r *Runner) advance(ctx context.Context, w *work) (bool, error) {
	if w.row.Step > StepCount {
		return true, r.finish(ctx, w)
	}
	s := &w.steps[w.row.Step-1]
	if s.Status == StatusPending {
		// Claiming the step is a compare-and-set like every other change.
		now := r.now()
		s.Status, s.StartedAt = StatusRunning, &now
		w.state.StepDeadline = new(now.Add(r.stepTimeout()))
		if err := r.save(ctx, w); err != nil {
			return false, err
		}
	}
	steps := [...]func(context.Context, *work, *Step) (bool, error){
		r.submit, r.dataPull, r.benchmark, r.train, r.recovery, r.labels, r.baseline,
	}
	done, err := steps[w.row.Step-1](ctx, w, s)
	if err != nil || !done {
		return false, err
	}
	if s.FinishedAt == nil {
		s.FinishedAt = new(r.now())
	}
	if s.Status == StatusRunning {
		s.Status = StatusPassed
	}
	w.row.Step++
	w.state.StepDeadline = nil
	if err := r.save(ctx, w); err != nil {
		return false, err
	}
	return true, nil
}

// expired reports whether the step has waited longer than it may.
func (r *Runner) expired(w *work) bool {
	return w.state.StepDeadline != nil && r.now().After(*w.state.StepDeadline)
}

// abort fails the step with reason and every later step as not run, and
// ends the run.
func (r *Runner) abort(w *work, s *Step, reason string) {
	now := r.now()
	s.Status, s.Summary, s.FinishedAt = StatusFailed, "Failed: "+reason, &now
	for i := s.Number; i < StepCount; i++ {
		w.steps[i].Status = StatusFailed
		w.steps[i].Summary = "Not run: step " + strconv.Itoa(s.Number) + " failed."
	}
	w.row.Step = StepCount
}

func (r *Runner) finish(ctx context.Context, w *work) error {
	status := StatusPassed
	for _, s := range w.steps {
		if s.Status != StatusPassed && s.Status != StatusSkipped {
			status = StatusFailed
		}
	}
	w.row.Status = string(status)
	w.row.FinishedAt = new(r.now())
	if err := r.save(ctx, w); err != nil {
		return err
	}
	rep, err := ReportOf(w.row)
	if err != nil {
		return err
	}
	return r.Audit.Record(ctx, audit.Event{Actor: w.row.StartedBy, Action: ActionRunFinish, Target: "pool/" + w.row.Pool,
		Detail: map[string]any{"run": w.row.ID, "status": status, "verdict": rep.Verdict}, Via: via(w.row.ID)})
}

func via(id int64) string { return fmt.Sprintf("acceptance-run:%d", id) }

func (w *work) actor() launch.Actor {
	return launch.Actor{Username: w.row.StartedBy, Groups: w.row.StarterGroups, Via: via(w.row.ID)}
}

// Step 1: launch through the normal launch path, then wait for admission.
func (r *Runner) submit(ctx context.Context, w *work, s *Step) (bool, error) {
	if w.row.JobName == "" {
		req, reason, err := r.launchRequest(ctx, w)
		if err != nil {
			return false, err
		}
		if reason != "" {
			r.abort(w, s, reason)
			return true, nil
		}
		res, err := r.Launcher.Launch(ctx, w.actor(), req)
		var fe problem.Fields
		var fbd *launch.ForbiddenError
		var col *launch.CollisionError
		switch {
		case errors.As(err, &fe) || errors.As(err, &fbd) || errors.As(err, &col):
			r.abort(w, s, "the launch was refused: "+err.Error())
			return true, nil
		case err != nil && r.expired(w):
			r.abort(w, s, "the job could not be launched: "+err.Error())
			return true, nil
		case err != nil:
			return false, fmt.Errorf("acceptance run %d: launch: %w", w.row.ID, err)
		}
		w.row.Namespace, w.row.JobName = res.Namespace, res.Name
		w.state.LaunchedAt = new(r.now())
		if err := r.save(ctx, w); err != nil {
			return false, err
		}
	}
	wls, err := r.Cluster.WorkloadsOwnedBy(w.row.Namespace, "Job", w.row.JobName)
	if err != nil {
		return false, err
	}
	for _, wl := range wls {
		c := apimeta.FindStatusCondition(wl.Status.Conditions, kueue.WorkloadAdmitted)
		if c == nil || c.Status != metav1.ConditionTrue {
			continue
		}
		wait := math.Max(0, c.LastTransitionTime.Sub(wl.CreationTimestamp.Time).Seconds())
		w.state.AdmittedAt = &c.LastTransitionTime.Time
		s.judge(atMost("queue wait", wait, w.def.MaxQueueWaitSeconds, "s"))
		return true, nil
	}
	if r.expired(w) {
		r.abort(w, s, fmt.Sprintf("the job %s was still queued after %s.", w.row.JobName, r.stepTimeout()))
		return true, nil
	}
	return false, nil
}

// launchRequest builds the launch of the production template; reason says
// in words why the definition cannot be launched.
func (r *Runner) launchRequest(ctx context.Context, w *work) (launch.Request, string, error) {
	d := w.def
	t, err := r.Launcher.Template(ctx, d.Template, 0)
	if errors.Is(err, store.ErrNotFound) {
		return launch.Request{}, fmt.Sprintf("the production template %q does not exist or has been retired.", d.Template), nil
	}
	if err != nil {
		return launch.Request{}, "", err
	}
	if t.Image != d.Image {
		return launch.Request{}, fmt.Sprintf("the template %q runs the image %s, not the production image %s.", d.Template, t.Image, d.Image), nil
	}
	i := slices.IndexFunc(t.GPUTypes, func(g catalog.GPUType) bool { return g.Pool == d.Pool })
	if i < 0 {
		return launch.Request{}, fmt.Sprintf("the template %q offers no GPUs of pool %s.", d.Template, d.Pool), nil
	}
	values := map[string]string{naming.FieldGPUType: t.GPUTypes[i].Name, naming.FieldGPUs: strconv.Itoa(d.GPUs)}
	p := t.Parameters
	switch {
	case p.Nodes != nil:
		values[naming.FieldNodes] = strconv.Itoa(d.Nodes)
	case d.Nodes > 1:
		return launch.Request{}, fmt.Sprintf("the template %q runs on one node; the definition asks for %d.", d.Template, d.Nodes), nil
	}
	if d.Dataset != "" {
		if !slices.ContainsFunc(p.Datasets, func(c catalog.Choice) bool { return c.Name == d.Dataset }) {
			return launch.Request{}, fmt.Sprintf("the template %q does not offer the dataset %q.", d.Template, d.Dataset), nil
		}
		values[naming.FieldDataset] = d.Dataset
	}
	if p.Args != nil {
		values[naming.FieldArgs] = d.Args(*p.Args)
	}
	w.state.Template = t.Name
	return launch.Request{Team: w.row.Team, Template: t.Name, Values: values, LaunchID: w.row.LaunchID}, "", nil
}

// events reads the reports of the run's rank-0 pod (the pods of index 0 of
// an Indexed Job; every pod of a plain Job), skipping the pod step 5 deleted.
func (r *Runner) events(ctx context.Context, w *work) ([]Event, error) {
	pods, err := r.Cluster.Pods(w.row.Namespace, w.row.JobName)
	if err != nil {
		return nil, err
	}
	var out []Event
	for _, p := range pods {
		if string(p.UID) == w.state.DeletedPodUID || !rankZero(p) || len(p.Spec.Containers) == 0 {
			continue
		}
		if p.Status.Phase == corev1.PodPending {
			continue
		}
		rc, err := r.Logs.Open(ctx, w.row.StartedBy, w.row.StarterGroups, kube.LogRequest{
			Namespace: p.Namespace, Pod: p.Name, Container: p.Spec.Containers[0].Name, Timestamps: true, LimitBytes: 8 << 20,
		})
		if err != nil {
			// A container that has not started has no log yet.
			if errors.Is(err, kube.ErrNotFound) {
				continue
			}
			return nil, err
		}
		b, err := io.ReadAll(rc)
		_ = rc.Close()
		if err != nil {
			return nil, fmt.Errorf("read log of %s/%s: %w", p.Namespace, p.Name, err)
		}
		out = append(out, ParseLog(string(b))...)
	}
	return out, nil
}

func rankZero(p *corev1.Pod) bool {
	idx, ok := p.Annotations[batchv1.JobCompletionIndexAnnotation]
	return !ok || idx == "0"
}

func lastOf(evs []Event, kind string) (Event, bool) {
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Kind == kind {
			return evs[i], true
		}
	}
	return Event{}, false
}

// waitEvent reads the events until one of kind arrives; on expiry it
// fails the step with the missing event in words.
func (r *Runner) waitEvent(ctx context.Context, w *work, s *Step, kind, what string) (Event, bool, error) {
	evs, err := r.events(ctx, w)
	if err != nil {
		return Event{}, false, err
	}
	if e, ok := lastOf(evs, kind); ok {
		return e, true, nil
	}
	if r.expired(w) {
		now := r.now()
		s.Status, s.FinishedAt = StatusFailed, &now
		s.Summary = fmt.Sprintf("Failed: the workload did not report %s within %s (no %q event in its log).", what, r.stepTimeout(), kind)
		return Event{}, false, errTimedOut
	}
	return Event{}, false, nil
}

var errTimedOut = errors.New("step timed out")

// eventStep runs a step that judges one event's figure.
func (r *Runner) eventStep(ctx context.Context, w *work, s *Step, kind, what string, judge func(Event)) (bool, error) {
	e, ok, err := r.waitEvent(ctx, w, s, kind, what)
	if errors.Is(err, errTimedOut) {
		return true, nil
	}
	if err != nil || !ok {
		return false, err
	}
	judge(e)
	return true, nil
}

// Step 2: the data pull.
func (r *Runner) dataPull(ctx context.Context, w *work, s *Step) (bool, error) {
	return r.eventStep(ctx, w, s, EventDataPulled, "its data pull", func(e Event) {
		w.state.DataPullSeconds = new(e.Seconds)
		s.judge(atMost("data pull", e.Seconds, w.def.MaxDataPullSeconds, "s"))
	})
}

// Step 3: nccl-tests' all-reduce bus bandwidth, when asked for.
func (r *Runner) benchmark(ctx context.Context, w *work, s *Step) (bool, error) {
	if !w.def.Benchmark || w.def.Nodes < 2 {
		s.Status = StatusSkipped
		s.Summary = "Skipped: the definition does not ask for the communication benchmark."
		if w.def.Benchmark {
			s.Summary = "Skipped: the run uses one node, so there is no multi-node communication to measure."
		}
		return true, nil
	}
	return r.eventStep(ctx, w, s, EventBusBandwidth, "the all-reduce benchmark's bus bandwidth", func(e Event) {
		w.state.BusBandwidth = new(e.BusBandwidth)
		s.judge(atLeast("all-reduce bus bandwidth", e.BusBandwidth, w.def.MinBusBandwidthGBps, "GB/s"))
	})
}

// Step 4: training throughput over the window.
func (r *Runner) train(ctx context.Context, w *work, s *Step) (bool, error) {
	return r.eventStep(ctx, w, s, EventThroughput, "its training throughput", func(e Event) {
		w.state.SamplesPerSecond = new(e.SamplesPerSecond)
		s.judge(atLeast("throughput", e.SamplesPerSecond, w.def.MinSamplesPerSecond, "samples/s"))
	})
}

// Step 5: wait for the checkpoint, delete the rank-0 pod as the starter,
// and measure from the deletion to the replacement's "resumed" report.
func (r *Runner) recovery(ctx context.Context, w *work, s *Step) (bool, error) {
	st := &w.state
	if st.CheckpointSeconds == nil {
		e, ok, err := r.waitEvent(ctx, w, s, EventCheckpointWritten, "a written checkpoint")
		if errors.Is(err, errTimedOut) {
			return true, nil
		}
		if err != nil || !ok {
			return false, err
		}
		st.CheckpointSeconds, st.CheckpointStep = new(e.Seconds), e.Step
		if err := r.save(ctx, w); err != nil {
			return false, err
		}
	}
	if st.DeletedPod == "" {
		pod, err := r.victim(w)
		if err != nil {
			return false, err
		}
		if pod == nil {
			if r.expired(w) {
				r.abort(w, s, "no running pod of the job was left to delete.")
				return true, nil
			}
			return false, nil
		}
		// The choice and the time are stored before the pod is deleted: a
		// runner taking over deletes this pod or none.
		st.DeletedPod, st.DeletedPodUID, st.DeleteRequestedAt = pod.Name, string(pod.UID), new(r.now())
		if err := r.save(ctx, w); err != nil {
			return false, err
		}
	}
	if !st.DeleteDone {
		deleted, err := r.deletePod(ctx, w)
		if err != nil {
			return false, err
		}
		// A runner killed after its delete reached the API server, before
		// this save, leaves the pod gone and the deletion unrecorded: the
		// runner taking over finds it gone and records it then. The entry
		// is written with the save, so it is written once.
		outcome := "deleted"
		if !deleted {
			outcome = "already gone"
		}
		entry, err := r.Audit.Entry(audit.Event{Actor: w.row.StartedBy, Action: ActionPodDelete, Target: w.row.Namespace + "/" + st.DeletedPod,
			Detail: map[string]any{"run": w.row.ID, "pool": w.row.Pool, "job": w.row.JobName, "uid": st.DeletedPodUID, "outcome": outcome}, Via: via(w.row.ID)})
		if err != nil {
			return false, err
		}
		st.DeleteDone = true
		if err := r.saveAudited(ctx, w, &entry); err != nil {
			return false, err
		}
	}
	e, ok, err := r.waitEvent(ctx, w, s, EventResumed, "that it resumed from the checkpoint")
	if errors.Is(err, errTimedOut) {
		s.Summary = fmt.Sprintf("Failed: pod %s was deleted at %s and no replacement reported %q within %s.",
			st.DeletedPod, st.DeleteRequestedAt.Format(time.RFC3339), EventResumed, r.stepTimeout())
		return true, nil
	}
	if err != nil || !ok {
		return false, err
	}
	at := e.At
	if at.IsZero() {
		at = r.now()
	}
	recovery := math.Max(0, math.Round(at.Sub(*st.DeleteRequestedAt).Seconds()*100)/100)
	st.ResumedAt, st.ResumedStep, st.RecoverySeconds = &at, e.Step, &recovery
	s.judge(atMost("checkpoint write", *st.CheckpointSeconds, w.def.MaxCheckpointWriteSeconds, "s"),
		atMost("recovery after deleting a pod", recovery, w.def.MaxRecoverySeconds, "s"))
	s.Summary += fmt.Sprintf(" Gantry deleted pod %s; its replacement resumed from step %d.", st.DeletedPod, e.Step)
	return true, nil
}

// victim is the running rank-0 pod step 5 deletes.
func (r *Runner) victim(w *work) (*corev1.Pod, error) {
	pods, err := r.Cluster.Pods(w.row.Namespace, w.row.JobName)
	if err != nil {
		return nil, err
	}
	for _, p := range pods {
		if rankZero(p) && p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			return p, nil
		}
	}
	return nil, nil
}

// deletePod deletes the chosen pod as the run's starter, only if it is
// still the pod chosen (UID precondition); false when it was already gone.
func (r *Runner) deletePod(ctx context.Context, w *work) (bool, error) {
	c, err := r.starterClient(w)
	if err != nil {
		return false, err
	}
	uid := types.UID(w.state.DeletedPodUID)
	err = c.CoreV1().Pods(w.row.Namespace).Delete(ctx, w.state.DeletedPod, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
		return false, nil
	}
	return false, fmt.Errorf("acceptance run %d: delete pod %s/%s as %s: %w", w.row.ID, w.row.Namespace, w.state.DeletedPod, w.row.StartedBy, kube.MapError(err))
}

// starterClient acts as the person who started the run.
func (r *Runner) starterClient(w *work) (kubernetes.Interface, error) {
	c, err := kubernetes.NewForConfig(kube.ForUser(r.Base, r.Identities, w.row.StartedBy, w.row.StarterGroups))
	if err != nil {
		return nil, fmt.Errorf("client for %s: %w", w.row.StartedBy, err)
	}
	return c, nil
}

// Step 6: the job has ended; every object and pod of the run carries the
// shared labels, and its GPU metrics, queue figures and ledger rows are
// found by them.
func (r *Runner) labels(ctx context.Context, w *work, s *Step) (bool, error) {
	job, err := r.Cluster.Job(w.row.Namespace, w.row.JobName)
	if err != nil && !errors.Is(err, kube.ErrNotFound) {
		return false, err
	}
	if job == nil {
		r.abort(w, s, fmt.Sprintf("the job %s/%s is gone, so its labels cannot be checked.", w.row.Namespace, w.row.JobName))
		return true, nil
	}
	if w.state.JobEndedAt == nil {
		ended := endedAt(job)
		if ended == nil {
			if r.expired(w) {
				now := r.now()
				s.Status, s.FinishedAt = StatusFailed, &now
				s.Summary = fmt.Sprintf("Failed: the job %s had not ended after %s, so its ledger row could not be checked.", w.row.JobName, r.stepTimeout())
				return true, nil
			}
			return false, nil
		}
		w.state.JobEndedAt = ended
		if err := r.save(ctx, w); err != nil {
			return false, err
		}
	}
	// Ledger rows are found by the team and instance labels (the team's
	// namespace follows from the team).
	ledger, err := r.Store.JobRuns(ctx, naming.Namespace(job.Labels[naming.LabelTeam]), job.Labels[naming.LabelInstance])
	if err != nil {
		return false, err
	}
	if len(ledger) == 0 && !r.expired(w) {
		return false, nil
	}
	// The job, its pods and its Services (a multi-node run's headless
	// Service) are read as the starter, once: the portal's caches keep only
	// the labels its pages read, and no Services.
	c, err := r.starterClient(w)
	if err != nil {
		return false, err
	}
	job, err = c.BatchV1().Jobs(w.row.Namespace).Get(ctx, w.row.JobName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		r.abort(w, s, fmt.Sprintf("the job %s/%s is gone, so its labels cannot be checked.", w.row.Namespace, w.row.JobName))
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("acceptance run %d: read job %s: %w", w.row.ID, w.row.JobName, kube.MapError(err))
	}
	objects := []metav1.Object{job}
	byInstance := metav1.ListOptions{LabelSelector: naming.LabelInstance + "=" + w.row.JobName}
	pods, err := c.CoreV1().Pods(w.row.Namespace).List(ctx, byInstance)
	if err != nil {
		return false, fmt.Errorf("acceptance run %d: list pods: %w", w.row.ID, kube.MapError(err))
	}
	for i := range pods.Items {
		objects = append(objects, &pods.Items[i])
	}
	svcs, err := c.CoreV1().Services(w.row.Namespace).List(ctx, byInstance)
	if err != nil {
		return false, fmt.Errorf("acceptance run %d: list services: %w", w.row.ID, kube.MapError(err))
	}
	for i := range svcs.Items {
		objects = append(objects, &svcs.Items[i])
	}
	var missing []string
	for _, o := range objects {
		if m := missingLabels(o.GetLabels(), w); len(m) > 0 {
			missing = append(missing, fmt.Sprintf("%s lacks %s", o.GetName(), strings.Join(m, ", ")))
		}
	}
	var problems, found []string
	found = append(found, fmt.Sprintf("%d objects and pods carry the %d shared labels", len(objects)-len(missing), len(naming.SharedLabels())))
	if len(missing) > 0 {
		problems = append(problems, strings.Join(missing, "; "))
	}
	wls, err := r.Cluster.WorkloadsOwnedBy(w.row.Namespace, "Job", w.row.JobName)
	if err != nil {
		return false, err
	}
	if i := slices.IndexFunc(wls, func(wl *kueue.Workload) bool {
		return string(wl.Spec.QueueName) == job.Labels[naming.LabelQueueName]
	}); i >= 0 && w.state.AdmittedAt != nil {
		found = append(found, fmt.Sprintf("the queue's Workload %s (queue %s) gives its wait", wls[i].Name, wls[i].Spec.QueueName))
	} else {
		problems = append(problems, "no admitted Kueue Workload in the queue named by the queue-name label")
	}
	if len(ledger) > 0 {
		var cost money.USD
		for _, l := range ledger {
			cost += l.CostUSD
		}
		w.row.CostUSD = &cost
		found = append(found, fmt.Sprintf("%d ledger row(s) of team %s costing %s", len(ledger), job.Labels[naming.LabelTeam], cost))
	} else {
		problems = append(problems, fmt.Sprintf("no cost ledger row for team %s, job %s within %s", job.Labels[naming.LabelTeam], job.Labels[naming.LabelInstance], r.stepTimeout()))
	}
	switch {
	case r.GPU == nil:
		found = append(found, "GPU metrics not checked (no Prometheus configured)")
	case w.state.AdmittedAt != nil:
		util, ok, err := r.GPU.AverageUtilization(ctx, gpu.Job{Namespace: w.row.Namespace, Name: job.Labels[naming.LabelInstance], Kind: "Job"},
			*w.state.AdmittedAt, w.state.JobEndedAt.Add(time.Minute))
		if err != nil {
			return false, err
		}
		if ok {
			found = append(found, fmt.Sprintf("GPU metrics (average utilization %.0f%%)", util))
		} else {
			problems = append(problems, "no DCGM GPU samples for the job's pods in Prometheus")
		}
	}
	s.judge(atMost("objects and pods without every shared label", float64(len(missing)), 0, ""))
	if len(problems) > 0 {
		s.Status = StatusFailed
		s.Summary = "Failed: " + strings.Join(problems, "; ") + ". Found: " + strings.Join(found, "; ") + "."
	} else {
		s.Summary = "Passed: " + strings.Join(found, "; ") + "."
	}
	return true, nil
}

// missingLabels are the shared label keys absent from labels, or with a
// value that contradicts the run.
func missingLabels(labels map[string]string, w *work) []string {
	var out []string
	for _, k := range naming.SharedLabels() {
		if labels[k] == "" {
			out = append(out, k)
		}
	}
	if v := labels[naming.LabelPool]; v != "" && v != w.def.Pool {
		out = append(out, naming.LabelPool+"="+v+" (not "+w.def.Pool+")")
	}
	if v := labels[naming.LabelTeam]; v != "" && v != w.row.Team {
		out = append(out, naming.LabelTeam+"="+v+" (not "+w.row.Team+")")
	}
	return out
}

func endedAt(job *batchv1.Job) *time.Time {
	for _, c := range job.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			t := c.LastTransitionTime.Time
			return &t
		}
	}
	return nil
}

// Step 7: useful work per dollar here against the baseline's.
func (r *Runner) baseline(ctx context.Context, w *work, s *Step) (bool, error) {
	d := w.def
	if w.state.SamplesPerSecond == nil || *w.state.SamplesPerSecond <= 0 {
		now := r.now()
		s.Status, s.FinishedAt = StatusFailed, &now
		s.Summary = "Failed: no training throughput was measured in step 4, so there is no useful work to compare."
		return true, nil
	}
	resource := "nvidia.com/gpu"
	if t, err := r.Launcher.Template(ctx, d.Template, 0); err == nil {
		if i := slices.IndexFunc(t.GPUTypes, func(g catalog.GPUType) bool { return g.Pool == d.Pool }); i >= 0 {
			resource = t.GPUTypes[i].Resource
		}
	}
	at := r.now()
	if w.state.AdmittedAt != nil {
		at = *w.state.AdmittedAt
	}
	price, err := r.Store.PriceAt(ctx, d.Pool, resource, at)
	if errors.Is(err, store.ErrNotFound) {
		r.abort(w, s, fmt.Sprintf("pool %s has no price for %s, so its work per dollar is unknown.", d.Pool, resource))
		return true, nil
	}
	if err != nil {
		return false, err
	}
	sps := *w.state.SamplesPerSecond
	gpus := int64(d.GPUs * d.Nodes)
	here := CostPerMillionSamples(price.USDPerHour, gpus, sps)
	ratio := math.Round(float64(d.BaselineUSDPerMillionSamples)/float64(here)*100) / 100
	w.state.BaselineRatio = &ratio
	s.judge(atLeast("useful work per dollar against the "+d.BaselineLabel+" baseline", ratio, d.MinBaselineRatio, "×"))
	outcome, verb := "Passed", "delivers"
	if s.Status == StatusFailed {
		outcome, verb = "Failed", "delivers only"
	}
	s.Summary = fmt.Sprintf("%s: at %s samples/s on %d GPUs at %s per GPU-hour a million samples cost %s here against %s at the %s baseline: this pool %s %s× the %s baseline per dollar (at least %s× needed).",
		outcome, strconv.FormatFloat(sps, 'f', -1, 64), gpus, price.USDPerHour, here,
		d.BaselineUSDPerMillionSamples, d.BaselineLabel, verb, strconv.FormatFloat(ratio, 'f', -1, 64), d.BaselineLabel,
		strconv.FormatFloat(d.MinBaselineRatio, 'f', -1, 64))
	return true, nil
}

// CostPerMillionSamples is what a million samples cost on gpus GPUs at
// price per GPU-hour and samplesPerSecond, exact to the micro-dollar:
// price × gpus × 10⁶ / (samplesPerSecond × 3600).
func CostPerMillionSamples(price money.USD, gpus int64, samplesPerSecond float64) money.USD {
	num := new(big.Rat).SetInt64(int64(price) * gpus * 1_000_000)
	den := new(big.Rat).Mul(new(big.Rat).SetFloat64(samplesPerSecond), big.NewRat(3600, 1))
	q := new(big.Rat).Quo(num, den)
	// Round half up on the exact quotient.
	n := new(big.Int).Mul(q.Num(), big.NewInt(2))
	n.Add(n, q.Denom())
	n.Quo(n, new(big.Int).Mul(q.Denom(), big.NewInt(2)))
	return money.USD(n.Int64())
}
