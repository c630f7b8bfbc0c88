package gpu

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/common/model"
)

// PeakOf answers, for one job, what IdlePeak answers: the highest
// utilization of its GPUs over the window, and whether there were samples
// both at the window's start and in its last idle-now window.
type PeakOf func(j Job) (peak float64, ok bool)

// IdlePeaks reads what IdlePeak reads for every job at once, over the same
// window before at, in one query grouped by pod: the idle reclaim asks it
// once a pass instead of asking IdlePeak up to three times for each
// running job, which with 5,000 GPU jobs running past the window kept a
// Prometheus busy with 15,000 queries a minute.
//
// A job's pods are the series IdlePeak's selector matches (its namespace,
// pods named as its kind's controller names them: Job.podPattern), so each
// pod counts towards every job whose pattern its name fits.
func (m *Metrics) IdlePeaks(ctx context.Context, window time.Duration, at time.Time) (PeakOf, error) {
	edge := min(m.idleNow, window)
	needThen := window > edge
	val, _, _, err := m.api.Query(ctx, idlePeaksQuery(window, edge), at)
	if err != nil {
		return nil, fmt.Errorf("query the GPU peaks of every job over %s: %w", window, err)
	}
	vec, _ := val.(model.Vector)
	jobs := jobPeaksOf(vec, needThen)
	return func(j Job) (float64, bool) {
		prefix, names := j.pods()
		if p := jobs[jobKey{j.Namespace, prefix, names}]; p.ok(needThen) {
			return p.peak, true
		}
		return 0, false
	}, nil
}

// idlePeaksQuery is IdlePeak's three queries as one, grouped by pod, each
// part tagged with figureLabel: "now" (samples in the last edge), "then"
// (samples in the edge at the window's start; the offset stands for
// IdlePeak's earlier evaluation time) and "peak" (the highest over the
// window).
func idlePeaksQuery(window, edge time.Duration) string {
	byPod := func(expr string, args ...any) string {
		return "max by (namespace, pod) (" + fmt.Sprintf(expr, args...) + ")"
	}
	figs := []figure{
		{"now", byPod("last_over_time(%s[%dms])", MetricUtil, edge.Milliseconds())},
		{"peak", byPod("max_over_time(%s[%dms])", MetricUtil, window.Milliseconds())},
	}
	if window > edge {
		figs = append(figs, figure{"then", byPod("last_over_time(%s[%dms] offset %dms)", MetricUtil,
			edge.Milliseconds(), (window - edge).Milliseconds())})
	}
	return tagged(figs)
}

// jobKey is the pods of a namespace whose names begin with prefix and
// continue as names says.
type jobKey struct {
	namespace, prefix string
	names             podNames
}

// jobPeak is what one job's pods showed over the window.
type jobPeak struct {
	peak               float64
	hasPeak, now, then bool
}

// ok says whether the peak counts: samples at both ends of the window (at
// its start only when the window is longer than its end's edge).
func (p jobPeak) ok(needThen bool) bool {
	return p.hasPeak && p.now && (p.then || !needThen)
}

// jobPeaksOf folds the per-pod figures into every job pattern a pod's name
// fits (Job.pods): pod "a-b-x" into the pods of "a" and "a-b" named in
// any way, "a-b-x" named as a bare pod, and, were x five random
// characters, "a-b" named as a Job's pods.
func jobPeaksOf(vec model.Vector, needThen bool) map[jobKey]jobPeak {
	jobs := map[jobKey]jobPeak{}
	for _, s := range vec {
		ns, pod := string(s.Metric["namespace"]), string(s.Metric["pod"])
		fig := string(s.Metric[figureLabel])
		if fig == "then" && !needThen {
			continue
		}
		add := func(k jobKey) {
			p := jobs[k]
			switch fig {
			case "now":
				p.now = true
			case "then":
				p.then = true
			case "peak":
				if v := float64(s.Value); !p.hasPeak || v > p.peak {
					p.peak, p.hasPeak = v, true
				}
			}
			jobs[k] = p
		}
		if pod == "" {
			continue
		}
		add(jobKey{ns, pod, barePod})
		if len(pod) > generatedBase {
			add(jobKey{ns, pod[:generatedBase], cutPods})
		}
		for i := 1; i < len(pod)-1; i++ {
			if pod[i] != '-' {
				continue
			}
			prefix, rest := pod[:i], pod[i:]
			for _, names := range afterTheName {
				if suffixMatch[names].MatchString(rest) {
					add(jobKey{ns, prefix, names})
				}
			}
		}
	}
	return jobs
}
