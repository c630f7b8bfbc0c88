package web

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"slices"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/cost"
	"github.com/gantry-dev/gantry/internal/kube"
	"github.com/gantry-dev/gantry/internal/queue"
	"github.com/gantry-dev/gantry/views"
)

// poolStatus is one pool's accelerator capacity, allocation and utilization.
type poolStatus struct {
	Pool      string `json:"pool"`
	Resource  string `json:"resource"`
	Nodes     int    `json:"nodes"`
	Capacity  int64  `json:"capacity"`
	Allocated int64  `json:"allocated"`
	// Utilization is the mean GPU utilization of the pool's nodes; nil
	// when Prometheus has no samples.
	Utilization *float64 `json:"utilizationPercent"`
}

// clusterStatus is what the cluster page and /api/v1/cluster/status show.
type clusterStatus struct {
	Pools  []poolStatus         `json:"pools"`
	Queues []queue.QueueSummary `json:"queues"`
	Month  cost.Report          `json:"month"`
	// Synced is false while the caches have not listed the cluster.
	Synced bool `json:"synced"`
	// Stale is set while the Kubernetes API server does not answer.
	Stale *apiStale `json:"stale,omitempty"`
}

// clusterShow is the admin's page of pools, queues and team spend.
func (h *handler) clusterShow(c *gin.Context) {
	cs, err := h.clusterStatusOf(c.Request.Context())
	if err != nil {
		h.fail(c, err)
		return
	}
	p := clusterProps(cs)
	p.Weekly = h.clusterWeeklyCharts(c)
	h.render(c, http.StatusOK, views.ClusterPage(h.nav(c, "cluster"), p))
}

// clusterProps is what the cluster page shows of the cluster's status.
func clusterProps(cs clusterStatus) views.ClusterProps {
	p := views.ClusterProps{MonthLabel: cs.Month.From.Format("January 2006")}
	if !cs.Synced {
		p.Error = "The portal is still reading the cluster; pools appear in a moment. Reload the page."
	}
	for _, pl := range cs.Pools {
		u := "no measurements"
		if pl.Utilization != nil {
			u = pct(*pl.Utilization)
		}
		p.Pools = append(p.Pools, views.PoolRow{Pool: pl.Pool, Resource: pl.Resource, Nodes: pl.Nodes,
			Capacity: strconv.FormatInt(pl.Capacity, 10), Allocated: strconv.FormatInt(pl.Allocated, 10), Utilization: u})
	}
	for _, q := range cs.Queues {
		p.Queues = append(p.Queues, quotaRows(q)...)
		p.Counts = append(p.Counts, views.QueueCountRow{Queue: q.ClusterQueue, Team: q.Team, Cohort: q.Cohort, Pending: q.Pending, Admitted: q.Admitted})
	}
	teams := make([]string, 0, len(cs.Month.ByTeam))
	for t := range cs.Month.ByTeam {
		teams = append(teams, t)
	}
	slices.Sort(teams)
	for _, t := range teams {
		p.Teams = append(p.Teams, views.TeamSpendRow{Team: t, SpendView: spendView(cs.Month.ByTeam[t])})
	}
	return p
}

func (h *handler) clusterStatusOf(ctx context.Context) (clusterStatus, error) {
	now := h.Now()
	cs := clusterStatus{Synced: true}
	lf, err := h.ledgerFiguresOf(ctx, "", now)
	if err != nil {
		return clusterStatus{}, err
	}
	cs.Month = lf.month
	cs.Queues = h.Status.Reader.AllQueues()
	var util map[string]float64
	if h.Status.GPU != nil {
		if util, err = h.Status.GPU.NodeUtilization(ctx, now); err != nil {
			h.Log.WarnContext(ctx, "GPU utilization by node unavailable", "err", err)
		}
	}
	allocated := map[string]int64{}
	for _, q := range cs.Queues {
		for _, f := range q.Flavors {
			allocated[f.Flavor+"|"+f.Resource] += f.Used
		}
	}
	for _, rf := range h.Status.Pools.ResourceFlavors() {
		capacity, err := h.Status.Pools.FlavorCapacity(rf)
		if errors.Is(err, kube.ErrNotSynced) {
			cs.Synced = false
			break
		}
		if err != nil {
			return clusterStatus{}, err
		}
		nodes, err := h.Status.Pools.FlavorNodes(rf)
		if err != nil {
			return clusterStatus{}, err
		}
		var sum float64
		var n int
		for _, node := range nodes {
			if v, ok := util[node]; ok {
				sum += v
				n++
			}
		}
		for _, res := range slices.Sorted(maps.Keys(capacity)) {
			if !cost.IsAccelerator(res) {
				continue
			}
			q := capacity[res]
			ps := poolStatus{Pool: rf.Name, Resource: string(res), Nodes: len(nodes), Capacity: q.Value(),
				Allocated: allocated[rf.Name+"|"+string(res)]}
			if n > 0 {
				avg := sum / float64(n)
				ps.Utilization = &avg
			}
			cs.Pools = append(cs.Pools, ps)
		}
	}
	return cs, nil
}
