// Package gpu reads measured GPU use from Prometheus (DCGM exporter
// metrics) and lays it out as server-drawn SVG charts.
package gpu

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"golang.org/x/sync/errgroup"

	"github.com/gantry-dev/gantry/internal/servertiming"
)

// DCGM metric names.
const (
	MetricUtil  = "DCGM_FI_DEV_GPU_UTIL"
	MetricMem   = "DCGM_FI_DEV_FB_USED"
	MetricPower = "DCGM_FI_DEV_POWER_USAGE"
)

// Metrics queries Prometheus.
type Metrics struct {
	api promv1.API
	// idleNow is how long a job's samples must all stay under a threshold
	// for it to be idle now.
	idleNow time.Duration
}

// Option configures Metrics.
type Option func(*Metrics)

// WithIdleNowWindow sets how long a job's samples must all stay under a
// threshold for it to be idle now (DefaultIdleNowWindow otherwise).
func WithIdleNowWindow(d time.Duration) Option {
	return func(m *Metrics) {
		if d > 0 {
			m.idleNow = d
		}
	}
}

// New returns Metrics for the Prometheus at baseURL.
func New(baseURL string, opts ...Option) (*Metrics, error) {
	c, err := api.NewClient(api.Config{Address: baseURL, RoundTripper: servertiming.Transport(servertiming.Prometheus, api.DefaultRoundTripper)})
	if err != nil {
		return nil, fmt.Errorf("prometheus client for %s: %w", baseURL, err)
	}
	m := &Metrics{api: promv1.NewAPI(c), idleNow: DefaultIdleNowWindow}
	for _, o := range opts {
		o(m)
	}
	return m, nil
}

// Sample is one point of a series.
type Sample struct {
	At    time.Time
	Value float64
}

// Usage is what a job's GPUs did: current values (mean over its GPUs) and
// the utilization series over its life.
type Usage struct {
	// HasData is false when Prometheus has no samples for the job.
	HasData     bool
	Utilization float64 // percent
	MemoryMiB   float64
	PowerWatts  float64
	Series      []Sample // utilization
	// RecentPeak is the highest utilization of any of its GPUs over the
	// last idle-now window (DefaultIdleNowWindow unless configured);
	// HasRecent is false without samples there or when
	// the job has not run that long.
	RecentPeak float64
	HasRecent  bool
	// Idle is true when every sample of the last idle-now window is under
	// IdleThreshold: the job is idle now. The reclaim's own threshold for
	// the job's kind and team may differ: see IdleUnder.
	Idle bool
	// At is the instant the figures are of: the end of the range asked.
	At time.Time
	// SeriesPending is set when the figures came without their series,
	// which had not come yet when the reader stopped waiting.
	SeriesPending bool
}

// IdleUnder says whether the job is idle now under threshold (percent).
func (u Usage) IdleUnder(threshold float64) bool {
	return u.HasRecent && u.RecentPeak < threshold
}

// IdleThreshold is the default idle threshold (percent) and
// DefaultIdleNowWindow how long a job's samples must all stay under it to
// be idle now.
const (
	IdleThreshold        = 5.0
	DefaultIdleNowWindow = 2 * time.Minute
)

// selector matches the series of a job's pods (Job.podPattern).
func selector(metric string, j Job) string {
	return fmt.Sprintf(`%s{namespace=%q,pod=~%q}`, metric, j.Namespace, j.podPattern())
}

// JobUsage returns the job's GPU usage from start (admission) to end (now
// for a running job), with up to 120 points in the series.
func (m *Metrics) JobUsage(ctx context.Context, j Job, start, end time.Time) (Usage, error) {
	u := Usage{At: end}
	if !end.After(start) {
		return u, nil
	}
	cur := func(metric string) string {
		return fmt.Sprintf("avg(last_over_time(%s[1m]))", selector(metric, j))
	}
	// The current figures (and the recent peak) in one query, the series
	// in another, both sent at once: a job page waits for the slower of
	// two, and a busy Prometheus serves two requests per view, not five.
	figures := []figure{{"util", cur(MetricUtil)}, {"mem", cur(MetricMem)}, {"power", cur(MetricPower)}}
	peakAsked := end.Sub(start) >= m.idleNow
	if peakAsked {
		figures = append(figures, figure{"peak", peakExpr(j, m.idleNow)})
	}
	var (
		g   errgroup.Group
		now map[string]float64
	)
	g.Go(func() (err error) {
		now, err = m.figures(ctx, figures, end)
		if err != nil {
			return fmt.Errorf("query GPU figures of %s: %w", j, err)
		}
		return nil
	})
	g.Go(func() (err error) {
		u.Series, err = m.JobSeries(ctx, j, start, end)
		return err
	})
	if err := g.Wait(); err != nil {
		return Usage{}, err
	}
	u.Utilization, u.HasData = now["util"]
	u.MemoryMiB, u.PowerWatts = now["mem"], now["power"]
	peak, recent := now["peak"]
	u.setRecent(end.Sub(start), m.idleNow, peak, recent)
	return u, nil
}

// setRecent gives a job's figures its recent peak (ok without samples in
// the idle-now window is false) and whether it is idle now, for a run of
// ran: only a run as long as the window, with figures, has either.
func (u *Usage) setRecent(ran, idleNow time.Duration, peak float64, ok bool) {
	if ran >= idleNow && u.HasData {
		u.RecentPeak, u.HasRecent = peak, ok
		u.Idle = u.IdleUnder(IdleThreshold)
	}
}

// JobSeries is the mean utilization of the job's GPUs from start to end,
// in up to 120 points (JobUsage's series): a running job's page reads its
// current figures from Current and only this of the job itself.
func (m *Metrics) JobSeries(ctx context.Context, j Job, start, end time.Time) ([]Sample, error) {
	if !end.After(start) {
		return nil, nil
	}
	step := max(end.Sub(start)/120, 5*time.Second)
	val, _, _, err := m.api.QueryRange(ctx, "avg("+selector(MetricUtil, j)+")",
		promv1.Range{Start: start, End: end, Step: step})
	if err != nil {
		return nil, fmt.Errorf("query GPU utilization of %s: %w", j, err)
	}
	mat, ok := val.(model.Matrix)
	if !ok || len(mat) == 0 || len(mat[0].Values) == 0 {
		return nil, nil
	}
	// Sized to the points: pages keep the series for a scrape interval,
	// one per running job viewed.
	out := make([]Sample, 0, len(mat[0].Values))
	for _, p := range mat[0].Values {
		out = append(out, Sample{At: p.Timestamp.Time(), Value: float64(p.Value)})
	}
	return out, nil
}

// figure is one instant figure of a combined query: its name and PromQL.
type figure struct{ name, expr string }

// figures evaluates several single-value expressions at once, in one
// query: each answers tagged with its name, and one with no samples is
// missing from the map.
func (m *Metrics) figures(ctx context.Context, figs []figure, at time.Time) (map[string]float64, error) {
	val, _, _, err := m.api.Query(ctx, tagged(figs), at)
	if err != nil {
		return nil, err
	}
	out := make(map[string]float64, len(figs))
	if vec, ok := val.(model.Vector); ok {
		for _, s := range vec {
			out[string(s.Metric[figureLabel])] = float64(s.Value)
		}
	}
	return out, nil
}

// figureLabel tags each figure of a combined query.
const figureLabel = "gantry_figure"

// tagged is one query answering every figure, each of its series tagged
// with its figure's name.
func tagged(figs []figure) string {
	parts := make([]string, len(figs))
	for i, f := range figs {
		parts[i] = fmt.Sprintf("label_replace(%s, %q, %q, \"\", \"\")", f.expr, figureLabel, f.name)
	}
	return strings.Join(parts, " or ")
}

// peak is the highest utilization of the job's GPUs over window before at.
func (m *Metrics) peak(ctx context.Context, j Job, window time.Duration, at time.Time) (float64, bool, error) {
	return m.scalar(ctx, peakExpr(j, window), at)
}

func peakExpr(j Job, window time.Duration) string {
	return fmt.Sprintf("max(max_over_time(%s[%dms]))", selector(MetricUtil, j), window.Milliseconds())
}

// IdlePeak is the highest utilization of a job's GPUs over the window
// before at. ok is false unless there are samples both at the start of the
// window and in its last idle-now window, so a gap in the data never passes
// for idleness.
func (m *Metrics) IdlePeak(ctx context.Context, j Job, window time.Duration, at time.Time) (peak float64, ok bool, err error) {
	sel := selector(MetricUtil, j)
	edge := min(m.idleNow, window)
	if _, now, err := m.scalar(ctx, fmt.Sprintf("max(last_over_time(%s[%dms]))", sel, edge.Milliseconds()), at); err != nil || !now {
		return 0, false, err
	}
	if window > edge {
		_, then, err := m.scalar(ctx, fmt.Sprintf("max(last_over_time(%s[%dms]))", sel, edge.Milliseconds()), at.Add(-window+edge))
		if err != nil || !then {
			return 0, false, err
		}
	}
	return m.peak(ctx, j, window, at)
}

// AverageUtilization is the mean GPU utilization of a job's pods from
// start to end; ok is false without samples.
func (m *Metrics) AverageUtilization(ctx context.Context, j Job, start, end time.Time) (float64, bool, error) {
	secs := int(end.Sub(start).Seconds())
	if secs < 1 {
		return 0, false, nil
	}
	return m.scalar(ctx, fmt.Sprintf("avg(avg_over_time(%s[%ds]))", selector(MetricUtil, j), secs), end)
}

// NodeUtilization is the mean current GPU utilization per node, keyed by
// the Hostname label Prometheus adds to DCGM series.
func (m *Metrics) NodeUtilization(ctx context.Context, at time.Time) (map[string]float64, error) {
	val, _, _, err := m.api.Query(ctx, "avg by (Hostname) (last_over_time("+MetricUtil+"[1m]))", at)
	if err != nil {
		return nil, fmt.Errorf("query GPU utilization by node: %w", err)
	}
	out := map[string]float64{}
	if vec, ok := val.(model.Vector); ok {
		for _, s := range vec {
			out[string(s.Metric["Hostname"])] = float64(s.Value)
		}
	}
	return out, nil
}

func (m *Metrics) scalar(ctx context.Context, q string, at time.Time) (float64, bool, error) {
	val, _, _, err := m.api.Query(ctx, q, at)
	if err != nil {
		return 0, false, fmt.Errorf("query %s: %w", q, err)
	}
	vec, ok := val.(model.Vector)
	if !ok || len(vec) == 0 {
		return 0, false, nil
	}
	return float64(vec[0].Value), true, nil
}

// Measured is how much of a time range a job's GPUs reported utilization
// for, and that time weighted by their mean utilization.
type Measured struct {
	Measured, Useful time.Duration
	// Through is the end of the range measured.
	Through time.Time
}

// measureWindow is the width of the windows a range is measured in: a few
// scrape intervals, so a window without any sample is a real gap.
const measureWindow = 30 * time.Second

// MeasuredUse measures a job's GPUs from start to end in windows that tile
// the range; a window with no sample counts as unmeasured, one with samples
// as measured and useful by its mean utilization.
func (m *Metrics) MeasuredUse(ctx context.Context, j Job, start, end time.Time) (Measured, error) {
	span := end.Sub(start)
	if span <= 0 {
		return Measured{Through: end}, nil
	}
	// Prometheus answers at most 11,000 points a series.
	n := max(1, min(int64(10_000), int64((span+measureWindow-1)/measureWindow)))
	step := (span / time.Duration(n)).Truncate(time.Millisecond)
	if step <= 0 {
		return Measured{Through: end}, nil
	}
	q := fmt.Sprintf("avg(avg_over_time(%s[%dms]))", selector(MetricUtil, j), step.Milliseconds())
	val, _, _, err := m.api.QueryRange(ctx, q, promv1.Range{Start: start.Add(step), End: end, Step: step})
	if err != nil {
		return Measured{}, fmt.Errorf("measure GPU utilization of %s: %w", j, err)
	}
	out := measuredFrom(val, step)
	out.Through = end
	return out, nil
}

// measuredFrom adds up the windows of a range query, each step long.
func measuredFrom(val model.Value, step time.Duration) Measured {
	var out Measured
	mat, ok := val.(model.Matrix)
	if !ok || len(mat) == 0 {
		return out
	}
	for _, p := range mat[0].Values {
		out.Measured += step
		out.Useful += time.Duration(float64(step) * max(0, min(1, float64(p.Value)/100)))
	}
	return out
}
