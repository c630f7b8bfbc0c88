package web

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gantry-dev/gantry/internal/catalog"
	"github.com/gantry-dev/gantry/internal/gpu"
	"github.com/gantry-dev/gantry/internal/launch"
	"github.com/gantry-dev/gantry/internal/naming"
	"github.com/gantry-dev/gantry/internal/queue"
	"github.com/gantry-dev/gantry/internal/store"
	"github.com/gantry-dev/gantry/views"
)

// heldPrometheus answers nothing until its gate is opened, as a
// Prometheus busy with a heavy query does.
type heldPrometheus struct {
	countingPrometheus
	gate chan struct{}
}

func (p *heldPrometheus) JobUsage(ctx context.Context, j gpu.Job, start, end time.Time) (gpu.Usage, error) {
	<-p.gate
	return p.countingPrometheus.JobUsage(ctx, j, start, end)
}

func (p *heldPrometheus) MeasuredUse(ctx context.Context, j gpu.Job, start, end time.Time) (gpu.Measured, error) {
	<-p.gate
	return p.countingPrometheus.MeasuredUse(ctx, j, start, end)
}

// gpuWaitHandler serves job pages over the simulated load cluster with
// prom as Prometheus, each page waiting up to wait for it.
func gpuWaitHandler(prom GPUMetrics, wait time.Duration) *handler {
	lc := newLoadCluster()
	status := withSharedFigures(&StatusDeps{Reader: queue.StatusReader{Queues: lc, Workloads: lc.benchCluster}, Jobs: lc.benchCluster,
		Costs: lc, Pools: lc, GPU: prom, GPUWait: wait}, nil)
	return &handler{Deps: Deps{Now: time.Now, Log: slog.New(slog.DiscardHandler), Jobs: launch.Reader{Jobs: lc.benchCluster}, Status: status},
		ledgerFigures: newLedgerFiguresCache()}
}

// runningLoadJob is the launch of the load cluster's training job i (the
// last ones are running).
func runningLoadJob(i int) store.Launch {
	team := loadTeams[i%len(loadTeams)]
	return store.Launch{Team: team, Name: fmt.Sprintf("train-%05d", i), Namespace: naming.Namespace(team), Kind: string(catalog.KindTraining)}
}

// renderPanel is the job's status panel as the page shows it.
func renderPanel(t *testing.T, q jobQueue) string {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, views.JobStatusFragment(jobQueueProps(q)).Render(context.Background(), &b))
	return b.String()
}

// TestJobPageWaitsForPrometheusOnlySoLong: while Prometheus does not
// answer, a running job's page comes within its wait and says its GPU
// figures are on their way (useful and idle hours "measuring…", nothing
// called unmeasured); the next view shows the figures the held queries
// brought, without asking again. The JSON API's read waits for them.
func TestJobPageWaitsForPrometheusOnlySoLong(t *testing.T) {
	prom := &heldPrometheus{gate: make(chan struct{})}
	const wait = 20 * time.Millisecond
	h := gpuWaitHandler(prom, wait)
	rec := runningLoadJob(loadJobs - 1)
	panel := func(q jobQueue) string { return renderPanel(t, q) }

	start := time.Now()
	q, err := h.jobQueueWithin(context.Background(), rec, nil, wait)
	require.NoError(t, err)
	assert.Less(t, time.Since(start), time.Second, "the page waited for a Prometheus that does not answer")
	assert.True(t, q.GPUPending, "GPU figures on their way")
	assert.True(t, q.MeasurePending, "measured use on its way")
	html := panel(q)
	assert.Contains(t, html, `data-testid="gpu-pending"`)
	assert.Contains(t, html, `data-testid="cost-useful-hours">measuring…<`)
	assert.NotContains(t, html, `data-testid="cost-unmeasured"`, "hours not yet measured are not called unmeasured")
	assert.Contains(t, html, `data-testid="cost-hours"`, "the allocated hours and the cost so far do not wait for Prometheus")

	close(prom.gate)
	require.Eventually(t, func() bool {
		return prom.usage.Load() == 1 && prom.measured.Load() == 1
	}, 5*time.Second, 10*time.Millisecond, "the held queries finish though no view waits for them")
	require.Eventually(t, func() bool {
		q, err = h.jobQueueWithin(context.Background(), rec, nil, wait)
		return err == nil && !q.GPUPending && !q.MeasurePending
	}, 5*time.Second, 10*time.Millisecond, "the next view shows the figures")
	require.NotNil(t, q.GPU)
	assert.InDelta(t, 42, q.GPU.Utilization, 0.01)
	html = panel(q)
	assert.Contains(t, html, `data-testid="gpu-util">42`)
	assert.NotContains(t, html, "measuring…")
	assert.NotContains(t, html, `data-testid="gpu-pending"`)
	assert.Equal(t, int64(1), prom.usage.Load(), "the next view used the held query's answer")

	// The JSON API waits as long as Prometheus takes.
	prom.gate = make(chan struct{})
	slow := runningLoadJob(loadJobs - 2)
	go func() {
		time.Sleep(5 * wait)
		close(prom.gate)
	}()
	q, err = h.jobQueueOf(context.Background(), slow, nil)
	require.NoError(t, err)
	assert.False(t, q.GPUPending)
	require.NotNil(t, q.GPU, "the API's read waited for the GPU figures")
	assert.InDelta(t, 42, q.GPU.Utilization, 0.01)
}

// age moves everything s keeps d into the past, as if nobody had looked
// for d; older changes what the kept figures say about their own time.
func (s *sharedFigures[V]) age(d time.Duration, older func(V) V) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, e := range s.byKey {
		e.value, e.started, e.expires = older(e.value), e.started.Add(-d), e.expires.Add(-d)
		s.byKey[k] = e
	}
	for f, e := range s.latest {
		e.value, e.started, e.loadedAt = older(e.value), e.started.Add(-d), e.loadedAt.Add(-d)
		s.latest[f] = e
	}
}

// TestJobPageShowsARunsRecentFiguresAtOnce: a running job nobody looked at
// for longer than its figures' grace (but under a minute) has its page
// come at once with the figures from the last look, saying when they were
// measured, while Prometheus is asked again in the background; the hours
// since then are not called unmeasured. The next view shows the new
// figures; the JSON API's read waits for fresh ones.
func TestJobPageShowsARunsRecentFiguresAtOnce(t *testing.T) {
	prom := &heldPrometheus{gate: make(chan struct{})}
	close(prom.gate)
	// Long enough for the fake's 20 ms queries on busy cores; a view that
	// waited for the held Prometheus would take all of it.
	const wait = 500 * time.Millisecond
	h := gpuWaitHandler(prom, wait)
	shared := h.Status.GPU.(*sharedGPUMetrics)
	rec := runningLoadJob(loadJobs - 10) // running for 9 minutes
	panel := func(q jobQueue) string { return renderPanel(t, q) }

	q, err := h.jobQueueWithin(context.Background(), rec, nil, wait)
	require.NoError(t, err)
	require.NotNil(t, q.GPU, "Prometheus answers within the wait")
	html := panel(q)
	assert.NotContains(t, html, `data-testid="gpu-as-of"`, "figures just measured need no time")
	assert.NotContains(t, html, "measured to")

	// 40 s later: past the figures' 15 s and their 15 s of grace.
	const gone = 40 * time.Second
	shared.usage.age(gone, func(u gpu.Usage) gpu.Usage { u.At = u.At.Add(-gone); return u })
	shared.measured.age(gone, func(m gpu.Measured) gpu.Measured {
		m.Through, m.Measured, m.Useful = m.Through.Add(-gone), m.Measured-gone, m.Useful-gone/2
		return m
	})
	measuredAt := q.GPU.At.Add(-gone)
	prom.gate = make(chan struct{}) // Prometheus busy from now on
	asked, measuredAsked := prom.usage.Load(), prom.measured.Load()
	start := time.Now()
	q, err = h.jobQueueWithin(context.Background(), rec, nil, wait)
	require.NoError(t, err)
	assert.Less(t, time.Since(start), wait, "the page did not wait for Prometheus")
	assert.False(t, q.GPUPending, "the last figures, not 'on their way'")
	assert.False(t, q.MeasurePending)
	require.NotNil(t, q.GPU)
	html = panel(q)
	assert.Contains(t, html, `data-testid="gpu-util">42`)
	assert.Contains(t, html, `data-testid="gpu-as-of">Measured at `+stamp(measuredAt), "the page says when its figures were measured")
	assert.Contains(t, html, "(measured to "+stamp(measuredAt)+")", "and to when the useful hours are measured")
	assert.NotContains(t, html, `data-testid="cost-unmeasured"`, "the 40 s since are not measured yet, not unmeasured")

	close(prom.gate)
	require.Eventually(t, func() bool { return prom.usage.Load() == asked+1 && prom.measured.Load() == measuredAsked+1 },
		5*time.Second, 10*time.Millisecond, "the view asked Prometheus again in the background")
	// The figures and the measured hours come back from two reads, each
	// kept when it lands: the view after both shows both fresh.
	require.Eventually(t, func() bool {
		q, err = h.jobQueueWithin(context.Background(), rec, nil, wait)
		return err == nil && q.GPU != nil && time.Since(q.GPU.At) < scrapeInterval && q.measureTail() <= scrapeInterval
	}, 5*time.Second, 10*time.Millisecond, "the next view shows the new figures and measured hours")
	html = panel(q)
	assert.NotContains(t, html, `data-testid="gpu-as-of"`)
	assert.NotContains(t, html, "measured to")

	// The JSON API never answers from a moment ago: 40 s on, its read
	// waits for Prometheus.
	shared.usage.age(gone, func(u gpu.Usage) gpu.Usage { u.At = u.At.Add(-gone); return u })
	shared.measured.age(gone, func(m gpu.Measured) gpu.Measured { m.Through = m.Through.Add(-gone); return m })
	prom.gate = make(chan struct{})
	go func() {
		time.Sleep(2 * wait)
		close(prom.gate)
	}()
	q, err = h.jobQueueOf(context.Background(), rec, nil)
	require.NoError(t, err)
	require.NotNil(t, q.GPU)
	assert.Less(t, time.Since(q.GPU.At), scrapeInterval, "the API's read waited for fresh figures")
}

// podsPrometheus is a Prometheus that also answers every pod's current
// figures at once (gpu.Metrics.CurrentFigures: each running load job's
// one pod at 61 %) and a job's chart alone, which it holds until
// seriesGate is opened.
type podsPrometheus struct {
	heldPrometheus
	seriesGate     chan struct{}
	current, chart atomic.Int64
}

func (p *podsPrometheus) CurrentFigures(_ context.Context, at time.Time) (*gpu.Current, error) {
	p.current.Add(1)
	time.Sleep(fakeQueryTime)
	var vec model.Vector
	for i := loadJobs - 20; i < loadJobs; i++ {
		team := loadTeams[i%len(loadTeams)]
		pod := fmt.Sprintf("train-%05d-b9zq4", i)
		for fig, v := range map[string]float64{"util": 61, "util_n": 1, "mem": 4096, "mem_n": 1, "power": 300, "power_n": 1, "peak": 70} {
			vec = append(vec, &model.Sample{Metric: model.Metric{"namespace": model.LabelValue(naming.Namespace(team)),
				"pod": model.LabelValue(pod), "gantry_figure": model.LabelValue(fig)}, Value: model.SampleValue(v)})
		}
	}
	return gpu.NewCurrent(vec, at, 2*time.Minute), nil
}

func (p *podsPrometheus) JobSeries(_ context.Context, _ gpu.Job, _, end time.Time) ([]gpu.Sample, error) {
	<-p.seriesGate
	p.chart.Add(1)
	return []gpu.Sample{{At: end.Add(-time.Minute), Value: 55}, {At: end, Value: 61}}, nil
}

// TestJobPageShowsCurrentFiguresWithoutWaitingForTheChart: running jobs'
// pages read their current figures from every pod's, asked of Prometheus
// once however many jobs are viewed, and only their charts one by one;
// while Prometheus holds a chart, the page comes within its wait with the
// job's figures (utilization, memory, power) and says the chart is on its
// way, and the next view shows it. No job's own figures query is sent.
func TestJobPageShowsCurrentFiguresWithoutWaitingForTheChart(t *testing.T) {
	prom := &podsPrometheus{heldPrometheus: heldPrometheus{gate: make(chan struct{})}, seriesGate: make(chan struct{})}
	close(prom.gate) // the measured use answers
	// Long enough for the fake's 20 ms queries on busy cores.
	const wait = 500 * time.Millisecond
	h := gpuWaitHandler(prom, wait)
	panel := func(q jobQueue) string { return renderPanel(t, q) }

	for i := loadJobs - 5; i < loadJobs; i++ {
		start := time.Now()
		q, err := h.jobQueueWithin(context.Background(), runningLoadJob(i), nil, wait)
		require.NoError(t, err)
		assert.Less(t, time.Since(start), 2*wait, "the page waited for the chart past its wait")
		assert.False(t, q.GPUPending, "the figures are there")
		require.NotNil(t, q.GPU)
		html := panel(q)
		assert.Contains(t, html, `data-testid="gpu-util">61`)
		assert.Contains(t, html, `data-testid="gpu-mem">4.0 GiB`)
		assert.Contains(t, html, `data-testid="gpu-chart-pending"`)
		assert.NotContains(t, html, `data-testid="gpu-pending"`)
		assert.NotContains(t, html, `data-testid="gpu-as-of"`, "figures just measured")
	}
	assert.Equal(t, int64(1), prom.current.Load(), "five jobs' pages, one query of every pod's figures")
	assert.Zero(t, prom.usage.Load(), "no job's own figures query")

	close(prom.seriesGate)
	require.Eventually(t, func() bool { return prom.chart.Load() == 5 }, 5*time.Second, 10*time.Millisecond,
		"the held charts' queries finish though no view waits for them")
	q, err := h.jobQueueWithin(context.Background(), runningLoadJob(loadJobs-1), nil, wait)
	require.NoError(t, err)
	require.NotNil(t, q.GPU)
	html := panel(q)
	assert.NotContains(t, html, `data-testid="gpu-chart-pending"`)
	assert.Contains(t, html, `id="gpu-chart"`, "the next view shows the chart")
	assert.Equal(t, int64(5), prom.chart.Load(), "from the held query's answer")
}
