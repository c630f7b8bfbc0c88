package reclaim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/gantry-dev/gantry/internal/audit"
	"github.com/gantry-dev/gantry/internal/catalog"
	"github.com/gantry-dev/gantry/internal/cost"
	"github.com/gantry-dev/gantry/internal/gpu"
	"github.com/gantry-dev/gantry/internal/money"
	"github.com/gantry-dev/gantry/internal/roster"
	"github.com/gantry-dev/gantry/internal/store"
)

// Audit actions of the idle reclaim.
const (
	ActionWarn     = "idle.warn"
	ActionStop     = "idle.stop"
	ActionScale    = "idle.scale"
	ActionFlag     = "idle.flag"
	ActionKeep     = "idle.keep"
	ActionExempt   = "idle.exempt"
	ActionUnexempt = "idle.unexempt"
	ActionPolicy   = "idle.policy"
	// Actor is who the audit log names for the reclaim's own steps.
	SystemActor = "idle-reclaim"
)

// Episode actions and close reasons as stored.
const (
	actStopped  = "stopped"
	actScaled   = "scaled"
	actFlagged  = "flagged"
	closeUsed   = "used again"
	closeKept   = "kept running"
	closeExempt = "exempted"
	closeGone   = "not running"
)

// Store is what the reclaim keeps in the database.
type Store interface {
	IdlePolicies(ctx context.Context) ([]store.IdlePolicy, error)
	SetIdlePolicy(ctx context.Context, p store.IdlePolicy) (*store.IdlePolicy, error)
	IdleHolds(ctx context.Context) (map[string]store.IdleHold, error)
	IdleHold(ctx context.Context, launchID string) (store.IdleHold, error)
	HoldIdle(ctx context.Context, h store.IdleHold, closeReason string, entry store.AuditEntry) error
	ReleaseIdleHold(ctx context.Context, launchID string, entry store.AuditEntry) error
	OpenIdleEpisodes(ctx context.Context) (map[string]store.IdleEpisode, error)
	LatestIdleEpisode(ctx context.Context, namespace, name string) (store.IdleEpisode, error)
	OpenIdleEpisode(ctx context.Context, e store.IdleEpisode, n *store.Notification, entry *store.AuditEntry) (store.IdleEpisode, error)
	ActOnIdleEpisode(ctx context.Context, e store.IdleEpisode, close bool, n *store.Notification, entry *store.AuditEntry) (bool, error)
	CloseIdleEpisode(ctx context.Context, id int64, at time.Time, reason string) error
	LiveLaunches(ctx context.Context) ([]store.Launch, error)
	PricesOver(ctx context.Context, flavor, resource string, from, to time.Time) ([]store.GPUPrice, error)
}

// Teams checks that a policy names a team.
type Teams interface {
	TeamByName(ctx context.Context, name string) (roster.Team, error)
}

// Metrics reads the GPUs' utilization.
type Metrics interface {
	// IdlePeak is the highest utilization of a job's GPUs over the window
	// before at; ok is false without samples covering the window.
	IdlePeak(ctx context.Context, j gpu.Job, window time.Duration, at time.Time) (float64, bool, error)
	// IdlePeaks answers IdlePeak for every job at once, over one window
	// before at: a pass asks it once per policy window, not once per job.
	IdlePeaks(ctx context.Context, window time.Duration, at time.Time) (gpu.PeakOf, error)
}

// Jobs is the part of the job cache the reclaim reads.
type Jobs interface {
	StatefulSet(namespace, name string) (*appsv1.StatefulSet, error)
	Deployment(namespace, name string) (*appsv1.Deployment, error)
	Pods(namespace, instance string) ([]*corev1.Pod, error)
	WorkloadsOwnedBy(namespace, kind, name string) ([]*kueue.Workload, error)
}

// Scaler changes replicas as the portal itself (the reclaim acts for no
// person), once per idle episode: it reports false, changing nothing, when
// the object already carries the episode (KubeScaler).
type Scaler interface {
	ScaleStatefulSet(ctx context.Context, namespace, name string, replicas int32, episode int64) (bool, error)
	ScaleDeployment(ctx context.Context, namespace, name string, replicas int32, episode int64) (bool, error)
}

// Templates gives a launch's template (an endpoint's minimum replicas).
type Templates interface {
	Template(ctx context.Context, name string, version int) (catalog.Template, error)
}

// Actor is the person holding or exempting a job, or setting a policy.
type Actor struct {
	Username string
	Via, IP  string
}

// Reclaimer runs the idle reclaim and answers the pages about it.
type Reclaimer struct {
	Settings  Settings
	Store     Store
	Teams     Teams
	Metrics   Metrics
	Jobs      Jobs
	Scaler    Scaler
	Templates Templates
	Audit     *audit.Log
	// KeptPolicies keeps the stored policies (read by every job page view and
	// each pass of the loop) until the table changes; nil reads them each
	// time.
	KeptPolicies *store.Kept[[]store.IdlePolicy]
	// KeptHolds keeps every hold (few, each set by a person; every job page
	// view asks for its job's) until one changes; nil reads the job's hold
	// on each view.
	KeptHolds *store.Kept[map[string]store.IdleHold]
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	Log *slog.Logger
}

func (r *Reclaimer) now() time.Time {
	if r.Now == nil {
		return time.Now().UTC()
	}
	return r.Now().UTC()
}

func (r *Reclaimer) entry(actor Actor, action, target string, detail map[string]any) (store.AuditEntry, error) {
	return r.Audit.Entry(audit.Event{Actor: actor.Username, Action: action, Target: target, Detail: detail, IP: actor.IP, Via: actor.Via})
}

func (r *Reclaimer) record(ctx context.Context, actor Actor, action, target string, detail map[string]any) error {
	return r.Audit.Record(ctx, audit.Event{Actor: actor.Username, Action: action, Target: target, Detail: detail, IP: actor.IP, Via: actor.Via})
}

var system = Actor{Username: SystemActor, Via: audit.ViaSystem}

// Run scans every Interval until ctx ends.
//
// A leader killed at any point, and the next leader scanning again, warn,
// flag, stop or scale a job once and audit it once: every action is
// recorded first, with its notice and audit entry, in one transaction that
// only one leader can win (one open episode per launch, a unique index;
// an episode acted on only while acted_at is NULL). The Kubernetes change
// comes after and is redone by the next leader for an episode recorded
// but not closed (a stop) or not yet on the Deployment (a scale-down);
// the change writes the episode id on the object in the same update and
// is skipped when it is already there, so a stop or scale-down that
// reached the cluster before the kill is not applied a second time, even
// if the owner started the job again meanwhile.
func (r *Reclaimer) Run(ctx context.Context) {
	t := time.NewTicker(r.Settings.Interval)
	defer t.Stop()
	for {
		if err := r.Scan(ctx); err != nil && ctx.Err() == nil {
			r.Log.WarnContext(ctx, "idle reclaim: scan failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Scan looks at every live job once. Each job's error is logged and the
// scan goes on; the returned error is the first.
func (r *Reclaimer) Scan(ctx context.Context) error {
	launches, err := r.Store.LiveLaunches(ctx)
	if err != nil {
		return err
	}
	ps, err := r.loadPolicies(ctx)
	if err != nil {
		return err
	}
	holds, err := r.Store.IdleHolds(ctx)
	if err != nil {
		return err
	}
	open, err := r.Store.OpenIdleEpisodes(ctx)
	if err != nil {
		return err
	}
	peaks := &passPeaks{metrics: r.Metrics, now: r.now, read: map[time.Duration]passRead{}}
	var first error
	for _, l := range launches {
		var ep *store.IdleEpisode
		if e, ok := open[l.LaunchID]; ok {
			ep = &e
		}
		var hold *store.IdleHold
		if h, ok := holds[l.LaunchID]; ok {
			hold = &h
		}
		if err := r.scanJob(ctx, l, ps.of(l.Team, catalog.Kind(l.Kind)), ep, hold, peaks); err != nil {
			r.Log.WarnContext(ctx, "idle reclaim", "job", l.Namespace+"/"+l.Name, "err", err)
			if first == nil {
				first = err
			}
		}
	}
	return first
}

// passPeaks reads the idle peaks of every job once per window in a pass
// (Metrics.IdlePeaks), when a job first needs them.
type passPeaks struct {
	metrics Metrics
	now     func() time.Time
	read    map[time.Duration]passRead
}

// passRead is one window's peaks, or why they could not be read.
type passRead struct {
	of  gpu.PeakOf
	err error
}

// peak is the job's highest GPU utilization over window, as IdlePeak
// answers it, from the pass's one read of that window.
func (p *passPeaks) peak(ctx context.Context, l store.Launch, window time.Duration) (float64, bool, error) {
	r, read := p.read[window]
	if !read {
		r.of, r.err = p.metrics.IdlePeaks(ctx, window, p.now())
		p.read[window] = r
	}
	if r.err != nil {
		return 0, false, r.err
	}
	peak, ok := r.of(gpuJob(l))
	return peak, ok, nil
}

// gpuJob is the launch's job as its GPUs' series name it (by its pods).
func gpuJob(l store.Launch) gpu.Job {
	return gpu.Job{Namespace: l.Namespace, Name: l.Name, Kind: l.Kind}
}

// running is a job's pods that hold GPUs, with what they hold.
type running struct {
	pods  []*corev1.Pod
	alloc cost.Allocation // per pod for endpoints, the whole job otherwise
	since time.Time       // when the last of them started
}

func (r *Reclaimer) runningOf(l store.Launch) (running, error) {
	pods, err := r.Jobs.Pods(l.Namespace, l.Name)
	if err != nil {
		return running{}, err
	}
	var out running
	// A Job's pods share the Job's Workload; a StatefulSet's or
	// Deployment's pods have one each. The Job's is looked up at its first
	// running pod: most jobs a pass looks at run none (9,000 of 10,000 in
	// the load run, where looking theirs up took 30 ms of a pass's 110).
	var (
		jobWorkloads []*kueue.Workload
		jobLooked    bool
	)
	for _, p := range pods {
		if p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil || p.Status.StartTime == nil {
			continue
		}
		if catalog.Kind(l.Kind) == catalog.KindTraining && !jobLooked {
			if jobWorkloads, err = r.Jobs.WorkloadsOwnedBy(l.Namespace, "Job", l.Name); err != nil {
				return running{}, err
			}
			jobLooked = true
		}
		wls := jobWorkloads
		if wls == nil {
			if wls, err = r.Jobs.WorkloadsOwnedBy(l.Namespace, "Pod", p.Name); err != nil {
				return running{}, err
			}
		}
		var a cost.Allocation
		for _, wl := range wls {
			if got, ok := cost.AllocationOf(wl); ok && got.GPUs > 0 {
				a = got
			}
		}
		if a.GPUs == 0 {
			a = allocationFromPod(p)
		}
		if a.GPUs == 0 {
			continue
		}
		out.pods = append(out.pods, p)
		switch {
		case out.alloc.Resource == "":
			out.alloc = a
		case catalog.Kind(l.Kind) == catalog.KindNotebook:
			out.alloc.GPUs += a.GPUs
		}
		if s := p.Status.StartTime.Time; s.After(out.since) {
			out.since = s
		}
	}
	return out, nil
}

// allocationFromPod reads the accelerator limits of a pod whose Workload
// is not in the cache; its flavor is unknown, so what it frees is unpriced.
func allocationFromPod(p *corev1.Pod) cost.Allocation {
	var a cost.Allocation
	for _, c := range p.Spec.Containers {
		for res, q := range c.Resources.Limits {
			if cost.IsAccelerator(res) {
				a.Resource = string(res)
				a.GPUs += q.Value()
			}
		}
	}
	return a
}

func (r *Reclaimer) scanJob(ctx context.Context, l store.Launch, p Policy, ep *store.IdleEpisode, hold *store.IdleHold, peaks *passPeaks) error {
	now := r.now()
	kind := catalog.Kind(l.Kind)
	if ep != nil && ep.Action == actScaled && ep.ClosedAt == nil {
		// A scale-down recorded (and audited) that may not have reached the
		// Deployment: carried out unless the Deployment carries the episode.
		if d, err := r.Jobs.Deployment(l.Namespace, l.Name); err != nil {
			return err
		} else if !appliedTo(d.ObjectMeta, ep.ID) {
			_, minimum, err := r.endpointReplicas(ctx, l)
			if err != nil {
				return err
			}
			if _, err := r.Scaler.ScaleDeployment(ctx, l.Namespace, l.Name, minimum, ep.ID); err != nil {
				return err
			}
		}
	}
	if ep != nil && ep.Action == actStopped {
		// A stop recorded (and audited) whose scale-down was not confirmed:
		// carried out unless the StatefulSet already carries the episode.
		if _, err := r.Scaler.ScaleStatefulSet(ctx, l.Namespace, l.Name, 0, ep.ID); err != nil {
			return err
		}
		return r.Store.CloseIdleEpisode(ctx, ep.ID, now, actStopped)
	}
	run, err := r.runningOf(l)
	if err != nil {
		return err
	}
	if len(run.pods) == 0 {
		if ep != nil {
			return r.Store.CloseIdleEpisode(ctx, ep.ID, now, closeGone)
		}
		return nil
	}
	if hold != nil && (hold.Exempt || hold.Until != nil && hold.Until.After(now)) {
		if ep != nil {
			return r.Store.CloseIdleEpisode(ctx, ep.ID, now, closeExempt)
		}
		return nil
	}
	if ep != nil {
		return r.follow(ctx, l, p, *ep, run, now)
	}
	// Idle means idle for the whole window, on every GPU, with samples.
	if now.Sub(run.since) < p.Window {
		return nil
	}
	peak, ok, err := peaks.peak(ctx, l, p.Window)
	if err != nil || !ok || peak >= p.Threshold {
		return err
	}
	e := store.IdleEpisode{LaunchID: l.LaunchID, Namespace: l.Namespace, Name: l.Name, Team: l.Team, Kind: l.Kind, Owner: l.Owner,
		ThresholdPercent: p.Threshold, WindowSeconds: int(p.Window.Seconds()), IdleSince: now.Add(-p.Window),
		Flavor: run.alloc.Flavor, Resource: run.alloc.Resource}
	switch kind {
	case catalog.KindNotebook:
		return r.warn(ctx, l, p, e, now)
	case catalog.KindInference:
		return r.scaleDown(ctx, l, p, e, run, now)
	default:
		return r.flag(ctx, l, p, e, now)
	}
}

func jobLink(l store.Launch) string { return "/teams/" + l.Team + "/jobs/" + l.Name }

func idleWords(p Policy) string {
	return fmt.Sprintf("its GPUs have been under %s%% utilization for %s", trimFloat(p.Threshold), Words(p.Window))
}

func trimFloat(f float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.2f", f), "0"), ".")
}

// warn opens a notebook's episode: notification, banner, stop after the grace.
func (r *Reclaimer) warn(ctx context.Context, l store.Launch, p Policy, e store.IdleEpisode, now time.Time) error {
	stopAt := now.Add(p.Grace)
	e.WarnedAt, e.ActAfter = &now, &stopAt
	n := &store.Notification{Username: l.Owner, Link: jobLink(l), CreatedAt: now,
		Text: fmt.Sprintf("Notebook %s in %s will be stopped at %s UTC: %s. Its workspace is kept. Open it and choose \"Keep it running\" to hold it for %s.",
			l.Name, l.Team, stopAt.Format("15:04"), idleWords(p), Words(p.Extension))}
	entry, err := r.entry(system, ActionWarn, l.Namespace+"/"+l.Name, map[string]any{"thresholdPercent": p.Threshold,
		"windowSeconds": int(p.Window.Seconds()), "stopAfter": stopAt})
	if err != nil {
		return err
	}
	_, err = r.Store.OpenIdleEpisode(ctx, e, n, &entry)
	if errors.Is(err, store.ErrEpisodeOpen) {
		return nil
	}
	return err
}

// flag opens a training job's episode: noted, never stopped.
func (r *Reclaimer) flag(ctx context.Context, l store.Launch, p Policy, e store.IdleEpisode, now time.Time) error {
	e.Action, e.ActedAt = actFlagged, &now
	n := &store.Notification{Username: l.Owner, Link: jobLink(l), CreatedAt: now,
		Text: fmt.Sprintf("Training job %s in %s is flagged idle: %s. It keeps running; check that it is not stuck.", l.Name, l.Team, idleWords(p))}
	entry, err := r.entry(system, ActionFlag, l.Namespace+"/"+l.Name, map[string]any{"thresholdPercent": p.Threshold, "windowSeconds": int(p.Window.Seconds())})
	if err != nil {
		return err
	}
	_, err = r.Store.OpenIdleEpisode(ctx, e, n, &entry)
	if errors.Is(err, store.ErrEpisodeOpen) {
		return nil
	}
	return err
}

// scaleDown scales an idle endpoint to its template's minimum replicas.
func (r *Reclaimer) scaleDown(ctx context.Context, l store.Launch, p Policy, e store.IdleEpisode, run running, now time.Time) error {
	replicas, minimum, err := r.endpointReplicas(ctx, l)
	if err != nil || replicas <= minimum {
		return err
	}
	freed := run.alloc
	freed.GPUs *= int64(replicas - minimum)
	if err := r.price(ctx, &e, freed, now); err != nil {
		return err
	}
	e.Action, e.ActedAt = actScaled, &now
	n := &store.Notification{Username: l.Owner, Link: jobLink(l), CreatedAt: now,
		Text: fmt.Sprintf("Endpoint %s in %s was scaled from %d to %d replicas: %s. Scale it up again from its page when traffic returns.",
			l.Name, l.Team, replicas, minimum, idleWords(p))}
	entry, err := r.entry(system, ActionScale, l.Namespace+"/"+l.Name, r.freedDetail(e, p, map[string]any{"fromReplicas": replicas, "toReplicas": minimum}))
	if err != nil {
		return err
	}
	// Recorded first, with its audit entry: the episode's unique open row
	// keeps a second replica from scaling or auditing it again, and an
	// open scaled episode not on the Deployment is scaled by the next
	// leader (scanJob).
	opened, err := r.Store.OpenIdleEpisode(ctx, e, n, &entry)
	if err != nil {
		if errors.Is(err, store.ErrEpisodeOpen) {
			return nil
		}
		return err
	}
	_, err = r.Scaler.ScaleDeployment(ctx, l.Namespace, l.Name, minimum, opened.ID)
	return err
}

// endpointReplicas is an endpoint's replicas now and its template's minimum.
func (r *Reclaimer) endpointReplicas(ctx context.Context, l store.Launch) (replicas, minimum int32, err error) {
	d, err := r.Jobs.Deployment(l.Namespace, l.Name)
	if err != nil {
		return 0, 0, err
	}
	t, err := r.Templates.Template(ctx, l.Template, l.TemplateVersion)
	if err != nil {
		return 0, 0, err
	}
	minimum, replicas = 1, 1
	if t.Parameters.Replicas != nil {
		minimum = int32(t.Parameters.Replicas.Min)
	}
	if d.Spec.Replicas != nil {
		replicas = *d.Spec.Replicas
	}
	return replicas, minimum, nil
}

// follow looks at a job with an open episode: used again closes it; a
// warned notebook past its grace is stopped.
func (r *Reclaimer) follow(ctx context.Context, l store.Launch, p Policy, ep store.IdleEpisode, run running, now time.Time) error {
	since := ep.IdleSince
	if ep.ActedAt != nil {
		// After a scale-down or flag, only fresh use counts.
		since = *ep.ActedAt
		if recent := now.Add(-2 * r.Settings.Interval); recent.After(since) {
			since = recent
		}
	}
	window := max(now.Sub(since), time.Second)
	peak, ok, err := r.Metrics.IdlePeak(ctx, gpuJob(l), window, now)
	if err != nil {
		return err
	}
	if ok && peak >= ep.ThresholdPercent {
		return r.Store.CloseIdleEpisode(ctx, ep.ID, now, closeUsed)
	}
	if catalog.Kind(l.Kind) != catalog.KindNotebook || ep.ActedAt != nil || ep.ActAfter == nil || now.Before(*ep.ActAfter) || !ok {
		return nil
	}
	return r.stop(ctx, l, p, ep, run, now)
}

// stop scales a warned notebook to zero; its workspace claim stays. The
// stop is recorded first, with its audit entry, by whichever replica
// claims the episode; that one scales and closes it, and a replica that
// finds it recorded but open scales again (see scanJob).
func (r *Reclaimer) stop(ctx context.Context, l store.Launch, p Policy, ep store.IdleEpisode, run running, now time.Time) error {
	if err := r.price(ctx, &ep, run.alloc, now); err != nil {
		return err
	}
	ep.Action, ep.ActedAt = actStopped, &now
	n := &store.Notification{Username: l.Owner, Link: jobLink(l), CreatedAt: now,
		Text: fmt.Sprintf("Notebook %s in %s was stopped: %s. Its workspace is kept; resume it from its page.", l.Name, l.Team, idleWords(p))}
	entry, err := r.entry(system, ActionStop, l.Namespace+"/"+l.Name, r.freedDetail(ep, p, map[string]any{"workspaceKept": true}))
	if err != nil {
		return err
	}
	claimed, err := r.Store.ActOnIdleEpisode(ctx, ep, false, n, &entry)
	if err != nil || !claimed {
		return err
	}
	if _, err := r.Scaler.ScaleStatefulSet(ctx, l.Namespace, l.Name, 0, ep.ID); err != nil {
		return err
	}
	return r.Store.CloseIdleEpisode(ctx, ep.ID, now, actStopped)
}

// price sets what a reclaim freed: the GPUs, the GPU-hours they sat idle
// since the episode began and what those cost at the prices then, and the
// price per hour no longer spent.
func (r *Reclaimer) price(ctx context.Context, e *store.IdleEpisode, a cost.Allocation, now time.Time) error {
	e.Flavor, e.Resource, e.GPUsFreed = a.Flavor, a.Resource, a.GPUs
	run := cost.Run{Allocation: a, Admitted: e.IdleSince, Ended: now}
	e.IdleGPUHours = run.GPUHours()
	if a.GPUs == 0 {
		return nil
	}
	ps, err := r.Store.PricesOver(ctx, a.Flavor, a.Resource, e.IdleSince, now)
	if err != nil {
		return err
	}
	var last money.USD
	e.IdleCostUSD, last = cost.Price(run, ps)
	e.USDPerHour = last * money.USD(a.GPUs)
	return nil
}

func (r *Reclaimer) freedDetail(e store.IdleEpisode, p Policy, extra map[string]any) map[string]any {
	d := map[string]any{"reason": "GPUs under " + trimFloat(p.Threshold) + "% for " + Words(p.Window),
		"thresholdPercent": p.Threshold, "windowSeconds": int(p.Window.Seconds()), "idleSince": e.IdleSince,
		"flavor": e.Flavor, "resource": e.Resource, "gpusFreed": e.GPUsFreed,
		"idleGpuHours": e.IdleGPUHours, "idleCostUsd": e.IdleCostUSD.Decimal(), "usdPerHourFreed": e.USDPerHour.Decimal()}
	for k, v := range extra {
		d[k] = v
	}
	return d
}
