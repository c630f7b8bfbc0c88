package web

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/gantry-dev/gantry/internal/catalog"
	"github.com/gantry-dev/gantry/internal/cost"
	"github.com/gantry-dev/gantry/internal/gpu"
	"github.com/gantry-dev/gantry/internal/kube"
	"github.com/gantry-dev/gantry/internal/launch"
	"github.com/gantry-dev/gantry/internal/queue"
	"github.com/gantry-dev/gantry/internal/store"
	"github.com/gantry-dev/gantry/views"
)

// jobQueue is everything the job status component shows.
type jobQueue struct {
	Team, Name string
	Status     queue.JobStatus
	// TypicalWait is the team's p50 wait for the flavor over the last week; 0 if unknown.
	TypicalWait time.Duration
	GPU         *gpu.Usage
	// GPUPending is set when Prometheus had not answered the job's GPU
	// figures within the page's wait; MeasurePending likewise for the
	// ongoing run's measured use (its useful and idle hours).
	GPUPending, MeasurePending bool
	// MeasuredThrough is the end of the ongoing run's measured use: its
	// hours since are not measured yet, not unmeasured.
	MeasuredThrough time.Time
	// Ended runs from the ledger and the ongoing run, priced.
	Runs    []store.LedgerRow
	Ongoing *store.LedgerRow
	// Now is when the status was read, for the events' ages.
	Now time.Time
}

// jobQueueStatus serves the job's status panel at the address the
// separate queue panel had before the page had one panel, for old links.
func (h *handler) jobQueueStatus(c *gin.Context) { h.jobStatusFragment(c) }

// jobQueueOf reads a job's status: phase and cause, queue, GPUs and cost.
// logs reads a failed container's last lines; nil leaves them out. It
// waits for Prometheus as long as it takes (the JSON API).
func (h *handler) jobQueueOf(ctx context.Context, rec store.Launch, logs queue.LastLogLines) (jobQueue, error) {
	return h.jobQueueWithin(ctx, rec, logs, 0)
}

// jobQueueWithin is jobQueueOf waiting at most gpuWait (zero: no limit)
// for the GPU figures from Prometheus; figures that come later are kept
// for the next view (sharedGPUMetrics) and marked pending on this one.
// With a wait (a page), the run's last figures, up to a minute old, answer
// at once while newer ones are read (recentGPUMetrics); the page says how
// old they are.
func (h *handler) jobQueueWithin(ctx context.Context, rec store.Launch, logs queue.LastLogLines, gpuWait time.Duration) (jobQueue, error) {
	now := h.Now()
	ns := rec.Namespace
	kind := catalog.Kind(rec.Kind)
	pods, err := h.Status.Jobs.Pods(ns, rec.Name)
	if err != nil {
		return jobQueue{}, err
	}
	in := queue.StatusInput{Pods: pods, Now: now, Logs: logs}
	if kind == catalog.KindTraining {
		if in.Workloads, err = h.Status.Jobs.WorkloadsOwnedBy(ns, "Job", rec.Name); err != nil {
			return jobQueue{}, err
		}
		job, err := h.Status.Jobs.Job(ns, rec.Name)
		switch {
		case err == nil:
			in.Job = job
		case !errors.Is(err, kube.ErrNotFound):
			return jobQueue{}, err
		}
	} else if in.Workloads, err = launch.PodWorkloads(h.Status.Jobs, ns, pods); err != nil {
		return jobQueue{}, err
	}
	if kind == catalog.KindNotebook && h.Jobs != nil {
		if st, err := h.Jobs.Status(rec.Team, rec.Name, kind); err == nil && st.Phase == queue.PhaseStopped {
			in.Stopped = true
		}
	}
	wls := in.Workloads
	q := jobQueue{Team: rec.Team, Name: rec.Name, Now: now}
	q.Status = h.Status.Reader.JobStatus(ctx, in)
	if c := deletion(rec); c != nil {
		q.Status.Phase, q.Status.Message, q.Status.Cause, q.Status.Pending = queue.PhaseDeleted, "", c, nil
		q.Status.EndedAt = *rec.DeletedAt
	}

	// The ended runs, the ongoing run's cost and measured use, the typical
	// wait and the GPU figures are independent reads (PostgreSQL and
	// Prometheus): the panel waits for the slowest, not for their sum.
	gctx, gm := ctx, h.Status.GPU
	if gpuWait > 0 {
		var cancel context.CancelFunc
		gctx, cancel = context.WithTimeout(ctx, gpuWait)
		defer cancel()
		if r, ok := gm.(recentGPUMetrics); ok {
			gm = recentReads{r}
		}
	}
	var g errgroup.Group
	g.Go(func() (err error) {
		q.Runs, err = h.Status.Costs.JobRuns(ctx, ns, rec.Name)
		return err
	})
	g.Go(func() (err error) {
		q.Ongoing, q.MeasuredThrough, q.MeasurePending, err = h.ongoingRow(ctx, gctx, gm, rec, wls, now)
		return err
	})
	flavor := q.Status.Allocation.Flavor
	if q.Status.Pending != nil {
		flavor = q.Status.Pending.Flavor
	}
	if flavor != "" {
		g.Go(func() error {
			// The team's week of ended runs, kept until the ledger changes
			// (and answered one change behind while it is read again).
			lf, err := h.ledgerWaitsOf(ctx, rec.Team, now)
			if err != nil {
				return err
			}
			q.TypicalWait = secs(lf.weekP50[flavor])
			return nil
		})
	}
	if gm != nil && !q.Status.AdmittedAt.IsZero() && q.Status.Allocation.Count > 0 {
		g.Go(func() error {
			q.GPU, q.GPUPending = h.jobGPUUse(ctx, gctx, gm, rec, q.Status, now)
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return jobQueue{}, err
	}
	return q, nil
}

// recentGPUMetrics answer a run's last figures at once while newer ones
// are read (sharedGPUMetrics).
type recentGPUMetrics interface {
	GPUMetrics
	RecentJobUsage(ctx context.Context, j gpu.Job, start, end time.Time) (gpu.Usage, error)
	RecentMeasuredUse(ctx context.Context, j gpu.Job, start, end time.Time) (gpu.Measured, error)
}

// recentReads is a page's GPU reads: the run's recent figures.
type recentReads struct{ recentGPUMetrics }

func (r recentReads) JobUsage(ctx context.Context, j gpu.Job, start, end time.Time) (gpu.Usage, error) {
	return r.RecentJobUsage(ctx, j, start, end)
}

func (r recentReads) MeasuredUse(ctx context.Context, j gpu.Job, start, end time.Time) (gpu.Measured, error) {
	return r.RecentMeasuredUse(ctx, j, start, end)
}

// ongoingRow is the cost so far of the job's admitted run, with its
// measured GPU use read within gctx (pending when gctx ended first); nil
// when no run is under way.
func (h *handler) ongoingRow(ctx, gctx context.Context, gm GPUMetrics, rec store.Launch, wls []*kueue.Workload, now time.Time) (out *store.LedgerRow, through time.Time, pending bool, err error) {
	var pr prices
	for _, wl := range wls {
		r, ok := cost.Ongoing(wl, now)
		if !ok {
			continue
		}
		if pr == nil {
			if pr, err = h.prices(ctx); err != nil {
				return nil, time.Time{}, false, err
			}
		}
		row := store.LedgerRow{JobName: r.JobName, Flavor: r.Flavor, Resource: r.Resource, GPUs: r.GPUs,
			AdmittedAt: r.Admitted, EndedAt: now, AllocatedGPUHours: r.GPUHours()}
		row.CostUSD, row.USDPerHour = pr.of(r)
		through = time.Time{}
		if gm != nil && r.GPUs > 0 {
			m, err := gm.MeasuredUse(gctx, gpuJob(rec), r.Admitted, now)
			switch {
			case err == nil:
				cost.SetMeasured(&row, m)
				through = m.Through
			case stillLoading(ctx, gctx, err):
				pending = true
			default:
				// Without measurements the run shows as unmeasured, never as useful.
				h.Log.WarnContext(ctx, "GPU measurement unavailable", "job", rec.Namespace+"/"+rec.Name, "err", err)
			}
		}
		out = &row
	}
	return out, through, pending, nil
}

// gpuJob is the launched (or outside) job whose GPUs a page shows.
func gpuJob(rec store.Launch) gpu.Job {
	return gpu.Job{Namespace: rec.Namespace, Name: rec.Name, Kind: rec.Kind}
}

// stillLoading tells a Prometheus read that outlasted the page's wait
// gctx (its figures come with the next view) from one that failed.
func stillLoading(ctx, gctx context.Context, err error) bool {
	return errors.Is(err, context.DeadlineExceeded) && gctx.Err() != nil && ctx.Err() == nil
}

// jobGPUUse is the job's GPU use since its admission, read within gctx,
// marked idle under its reclaim policy's threshold while it runs; nil
// while Prometheus is away (a page without GPU figures beats no page) or,
// with pending, has not answered within gctx.
func (h *handler) jobGPUUse(ctx, gctx context.Context, gm GPUMetrics, rec store.Launch, st queue.JobStatus, now time.Time) (use *gpu.Usage, pending bool) {
	u, err := gm.JobUsage(gctx, gpuJob(rec), st.AdmittedAt, figuresEnd(st, now))
	if stillLoading(ctx, gctx, err) {
		return nil, true
	}
	if err != nil {
		h.Log.WarnContext(ctx, "GPU usage unavailable", "job", rec.Namespace+"/"+rec.Name, "err", err)
		return nil, false
	}
	if t, ok := h.idleThreshold(ctx, rec); ok && st.EndedAt.IsZero() {
		u.Idle = u.IdleUnder(t)
	}
	return &u, false
}

// percentile of values (0..1) by linear interpolation; 0 for none.
func percentile(values []float64, p float64) float64 {
	if len(values) == 0 {
		return 0
	}
	v := slices.Clone(values)
	slices.Sort(v)
	pos := p * float64(len(v)-1)
	lo := int(pos)
	if lo+1 >= len(v) {
		return v[lo]
	}
	return v[lo] + (v[lo+1]-v[lo])*(pos-float64(lo))
}

// jobQueueProps is the status panel's queue, GPU and cost part.
func jobQueueProps(q jobQueue) views.JobStatusPanel {
	st := q.Status
	p := views.JobStatusPanel{URL: jobURL(q.Team, q.Name) + "/status", Phase: string(st.Phase)}
	if st.Waited > 0 {
		p.Waited = wait(st.Waited)
	}
	if q.TypicalWait > 0 {
		p.TypicalWait = wait(q.TypicalWait)
	}
	if pe := st.Pending; pe != nil {
		p.Pending = &views.PendingView{Words: pe.Words, Raw: pe.Raw}
		if pe.PositionCluster >= 0 {
			p.Pending.PositionLocal, p.Pending.PositionCluster = pe.PositionLocal+1, pe.PositionCluster+1
		}
	}
	for _, m := range st.Timeline {
		p.Timeline = append(p.Timeline, views.TimelineRow{At: stamp(m.At), Phase: string(m.Phase), Detail: m.Detail})
	}
	if a := st.Allocation; a.Flavor != "" {
		p.Allocation = allocationWords(a)
	}
	for _, e := range st.Events {
		p.Events = append(p.Events, views.EventRow{Object: e.Object, Reason: e.Reason, Message: e.Message, Count: e.Count,
			Age: wait(max(0, q.Now.Sub(e.LastSeen))), Warning: e.Type == corev1.EventTypeWarning})
	}
	if e := st.Eviction; e != nil {
		p.Eviction = &views.EvictionView{At: stamp(e.At), Reason: e.Reason, Message: e.Message, PreemptedBy: e.PreemptedBy, Preempted: e.Preempted}
	}
	if f := st.Failure; f != nil {
		p.Failure = &views.FailureView{Pod: f.Pod, Container: f.Container, Reason: f.Reason, Message: f.Message, ExitCode: f.ExitCode, OOMKilled: f.OOMKilled}
	}
	if q.GPUPending {
		p.GPU = &views.GPUView{Pending: true}
	}
	if u := q.GPU; u != nil {
		g := &views.GPUView{HasData: u.HasData, Idle: u.Idle, ChartPending: u.SeriesPending}
		if !u.SeriesPending {
			g.Chart = lineChart(gpu.PercentChart(u.Series, gpu.IdleThreshold), "gpu-chart")
		}
		if u.HasData {
			g.Utilization = pct(u.Utilization)
			g.Memory = mib(u.MemoryMiB)
			g.Power = watts(u.PowerWatts)
			if figuresEnd(q.Status, q.Now).Sub(u.At) > scrapeInterval && !u.At.IsZero() {
				g.AsOf = stamp(u.At)
			}
		}
		p.GPU = g
	}
	rows := slices.Clone(q.Runs)
	if q.Ongoing != nil {
		rows = append(rows, *q.Ongoing)
	}
	if len(rows) > 0 {
		s := cost.Summarize(rows, time.Time{}, time.Time{}, 0).Spend
		last := rows[len(rows)-1]
		cv := &views.CostView{Price: usd(last.USDPerHour) + " per " + unitOf(last.Resource) + "-hour",
			AllocatedHours: hours(s.AllocatedGPUHours), UsefulHours: hours(s.UsefulGPUHours),
			Cost: usd(s.CostUSD), IdleCost: usd(s.IdleCostUSD), Ended: q.Ongoing == nil}
		switch {
		case q.MeasurePending:
			// The ongoing run's hours are neither useful, idle nor unmeasured yet.
			cv.UsefulHours, cv.IdleCost = measuring, measuring
		default:
			// The ongoing run's hours since its measured use's end are
			// not measured yet, not unmeasured.
			unmeasured, unmeasuredCost := s.UnmeasuredGPUHours, s.UnmeasuredCostUSD
			if tail := q.measureTail(); tail > 0 {
				gpus := q.Ongoing.GPUs
				unmeasured -= float64(gpus) * tail.Hours()
				unmeasuredCost = max(0, unmeasuredCost-q.Ongoing.USDPerHour.For(gpus, tail))
				if tail > scrapeInterval {
					cv.UsefulHours += " (measured to " + stamp(q.MeasuredThrough) + ")"
				}
			}
			// Seconds without samples (a run younger than its first scrape)
			// are under a hundredth of an hour and a cent: no line of zeros.
			if h, c := hours(unmeasured), usd(unmeasuredCost); unmeasured > unmeasuredEpsilon && (h != hours(0) || c != usd(0)) {
				cv.UnmeasuredHours, cv.UnmeasuredCost = h, c
			}
		}
		if s.FailedCostUSD > 0 {
			cv.Wasted = usd(s.FailedCostUSD)
		}
		p.Cost = cv
	}
	return p
}

// measuring stands for a figure from Prometheus still on its way.
const measuring = "measuring…"

// unmeasuredEpsilon absorbs the rounding of taking the not yet measured
// tail off the unmeasured hours.
const unmeasuredEpsilon = 1e-9

// figuresEnd is the instant a job's GPU figures describe: its end, or now.
func figuresEnd(st queue.JobStatus, now time.Time) time.Time {
	if !st.EndedAt.IsZero() {
		return st.EndedAt
	}
	return now
}

// measureTail is how much of the ongoing run comes after its measured use:
// figures answered from a moment ago (recentGPUMetrics) end before now.
func (q jobQueue) measureTail() time.Duration {
	if q.Ongoing == nil || q.MeasuredThrough.IsZero() || !q.MeasuredThrough.Before(q.Now) {
		return 0
	}
	return min(q.Now.Sub(q.MeasuredThrough), q.Now.Sub(q.Ongoing.AdmittedAt))
}

func allocationWords(a queue.Allocation) string {
	s := queue.Amount(a.Count, a.Flavor, a.Resource) + " in pool " + a.Flavor
	if a.Count == 0 {
		s = "no GPUs, pool " + a.Flavor
	}
	if a.MIG {
		s += " (MIG slices, not whole GPUs)"
	} else if a.Count > 0 {
		s += " (whole GPUs)"
	}
	if len(a.Nodes) > 0 {
		s += " on " + strings.Join(a.Nodes, ", ")
	}
	return s
}

func unitOf(resource string) string {
	if strings.HasPrefix(resource, "nvidia.com/mig-") {
		return "slice"
	}
	return "GPU"
}

func lineChart(c gpu.Chart, testID string) views.LineChart {
	out := views.LineChart{Width: c.Width, Height: c.Height, Line: c.Line, Threshold: c.Threshold, Summary: c.Summary, TestID: testID}
	for _, l := range c.YLabels {
		out.YLabels = append(out.YLabels, views.AxisLabel{Pos: l.Pos, Text: l.Text})
	}
	for _, l := range c.XLabels {
		out.XLabels = append(out.XLabels, views.AxisLabel{Pos: l.Pos, Text: l.Text})
	}
	return out
}

func barChart(c gpu.BarChart, testID string) views.BarChart {
	out := views.BarChart{Width: c.Width, Height: c.Height, Summary: c.Summary, TestID: testID}
	for _, b := range c.Bars {
		out.Bars = append(out.Bars, views.ChartBar{Label: b.Label, Value: b.Value, Class: b.Class, X: b.X, Y: b.Y, W: b.W, H: b.H})
	}
	return out
}
