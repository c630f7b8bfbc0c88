package gpu

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/common/model"
)

// Current is every GPU pod's figures at one instant, read in one query:
// what JobUsage's figures query answers for one job (its current
// utilization, memory and power, the mean over its GPUs, and its recent
// peak), for every job at once. The job pages of running jobs read their
// current figures from it, shared by every view for a scrape interval,
// and ask Prometheus about a job only for its chart: a running job viewed
// for the first time in a minute otherwise waited for its own figures,
// and at 10,000 workloads one such view in twenty waited the page's
// whole wait for Prometheus (the job page's p99).
type Current struct {
	// At is the instant the figures are of.
	At      time.Time
	idleNow time.Duration
	// pods are each namespace's GPU pods, by name.
	pods map[string][]podNow
}

// podNow is one pod's figures: per metric, the sum over its GPUs' series
// and how many series there were (the mean over a job's GPUs is over every
// series of its pods), and the highest utilization of any of them over
// the idle-now window.
type podNow struct {
	name    string
	sum     [3]float64
	n       [3]int
	peak    float64
	hasPeak bool
}

// The metrics of podNow's sums, in the order currentQuery names them.
const (
	nowUtil = iota
	nowMem
	nowPower
)

var nowMetrics = [...]struct{ name, metric string }{
	nowUtil:  {"util", MetricUtil},
	nowMem:   {"mem", MetricMem},
	nowPower: {"power", MetricPower},
}

// CurrentFigures reads every GPU pod's figures at at in one query.
func (m *Metrics) CurrentFigures(ctx context.Context, at time.Time) (*Current, error) {
	val, _, _, err := m.api.Query(ctx, currentQuery(m.idleNow), at)
	if err != nil {
		return nil, fmt.Errorf("query the current GPU figures of every pod: %w", err)
	}
	vec, _ := val.(model.Vector)
	return NewCurrent(vec, at, m.idleNow), nil
}

// currentQuery is JobUsage's figures query grouped by pod, each part
// tagged with figureLabel: per metric its sum ("util") and count
// ("util_n") over the pod's series, and the pod's peak ("peak").
func currentQuery(idleNow time.Duration) string {
	byPod := func(op, expr string) string { return op + " by (namespace, pod) (" + expr + ")" }
	var figs []figure
	for _, mt := range nowMetrics {
		last := fmt.Sprintf("last_over_time(%s[1m])", mt.metric)
		figs = append(figs, figure{mt.name, byPod("sum", last)}, figure{mt.name + "_n", byPod("count", last)})
	}
	figs = append(figs, figure{"peak", byPod("max", fmt.Sprintf("max_over_time(%s[%dms])", MetricUtil, idleNow.Milliseconds()))})
	return tagged(figs)
}

// NewCurrent gathers the samples of CurrentFigures' query, evaluated at
// at, by pod; idleNow is the window of their peaks.
func NewCurrent(vec model.Vector, at time.Time, idleNow time.Duration) *Current {
	byPod := map[[2]string]*podNow{}
	for _, s := range vec {
		ns, pod := string(s.Metric["namespace"]), string(s.Metric["pod"])
		if pod == "" {
			continue
		}
		p := byPod[[2]string{ns, pod}]
		if p == nil {
			p = &podNow{name: pod}
			byPod[[2]string{ns, pod}] = p
		}
		v, fig := float64(s.Value), string(s.Metric[figureLabel])
		if fig == "peak" {
			p.peak, p.hasPeak = v, true
			continue
		}
		for i, mt := range nowMetrics {
			switch fig {
			case mt.name:
				p.sum[i] = v
			case mt.name + "_n":
				p.n[i] = int(v)
			}
		}
	}
	c := &Current{At: at, idleNow: idleNow, pods: map[string][]podNow{}}
	for k, p := range byPod {
		c.pods[k[0]] = append(c.pods[k[0]], *p)
	}
	for _, ps := range c.pods {
		slices.SortFunc(ps, func(a, b podNow) int { return strings.Compare(a.name, b.name) })
	}
	return c
}

// Job is what JobUsage answers for j admitted at start, at c.At, without
// the series: the mean over the GPUs of the pods its selector matches
// (Job.podPattern) and, for a job that has run for the idle-now window,
// their recent peak.
func (c *Current) Job(j Job, start time.Time) Usage {
	u := Usage{At: c.At}
	if !c.At.After(start) {
		return u
	}
	prefix, names := j.pods()
	var (
		sum     [3]float64
		n       [3]int
		peak    float64
		hasPeak bool
	)
	ps := c.pods[j.Namespace]
	i, _ := slices.BinarySearchFunc(ps, prefix, func(p podNow, prefix string) int { return strings.Compare(p.name, prefix) })
	for ; i < len(ps) && strings.HasPrefix(ps[i].name, prefix); i++ {
		p := &ps[i]
		if !suffixMatch[names].MatchString(p.name[len(prefix):]) {
			continue
		}
		for m := range sum {
			sum[m] += p.sum[m]
			n[m] += p.n[m]
		}
		if p.hasPeak && (!hasPeak || p.peak > peak) {
			peak, hasPeak = p.peak, true
		}
	}
	mean := func(m int) (float64, bool) {
		if n[m] == 0 {
			return 0, false
		}
		return sum[m] / float64(n[m]), true
	}
	u.Utilization, u.HasData = mean(nowUtil)
	u.MemoryMiB, _ = mean(nowMem)
	u.PowerWatts, _ = mean(nowPower)
	u.setRecent(c.At.Sub(start), c.idleNow, peak, hasPeak)
	return u
}
