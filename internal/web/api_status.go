package web

import (
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/auth"
	"github.com/gantry-dev/gantry/internal/cost"
	"github.com/gantry-dev/gantry/internal/queue"
)

// apiJobStatusBody is GET /api/v1/teams/{team}/jobs/{name}/status.
type apiJobStatusBody struct {
	Team       string            `json:"team"`
	Name       string            `json:"name"`
	Phase      string            `json:"phase"`
	Timeline   []apiMoment       `json:"timeline"`
	Pending    *apiPending       `json:"pending,omitempty"`
	WaitedSec  float64           `json:"waitedSeconds"`
	TypicalSec float64           `json:"typicalWaitSeconds,omitempty"`
	Allocation *queue.Allocation `json:"allocation,omitempty"`
	Eviction   *queue.Eviction   `json:"eviction,omitempty"`
	Failure    *queue.Failure    `json:"failure,omitempty"`
	GPU        *apiGPU           `json:"gpu,omitempty"`
	Cost       *cost.Spend       `json:"cost,omitempty"`
}

type apiMoment struct {
	At     time.Time `json:"at"`
	Phase  string    `json:"phase"`
	Detail string    `json:"detail,omitempty"`
}

type apiPending struct {
	Reason          string `json:"reason"`
	KueueMessage    string `json:"kueueMessage"`
	Flavor          string `json:"flavor,omitempty"`
	Resource        string `json:"resource,omitempty"`
	Needed          int64  `json:"needed"`
	TeamUsed        int64  `json:"teamUsed"`
	TeamNominal     int64  `json:"teamNominal"`
	CohortLendable  int64  `json:"cohortLendable"`
	PositionLocal   int    `json:"positionInLocalQueue"`
	PositionCluster int    `json:"positionInClusterQueue"`
}

type apiGPU struct {
	HasData     bool    `json:"hasData"`
	Utilization float64 `json:"utilizationPercent"`
	MemoryMiB   float64 `json:"memoryUsedMiB"`
	PowerWatts  float64 `json:"powerWatts"`
	Idle        bool    `json:"idle"`
}

// apiJobStatus is a job's queue, GPU and cost status as JSON.
func (h *handler) apiJobStatus(c *gin.Context) {
	_, rec, err := h.jobRecord(c)
	if err != nil {
		h.fail(c, err)
		return
	}
	q, err := h.jobQueueOf(c.Request.Context(), rec)
	if err != nil {
		h.fail(c, err)
		return
	}
	st := q.Status
	b := apiJobStatusBody{Team: rec.Team, Name: rec.Name, Phase: st.Phase, WaitedSec: st.Waited.Seconds(),
		TypicalSec: q.TypicalWait.Seconds(), Eviction: st.Eviction, Failure: st.Failure, Timeline: []apiMoment{}}
	for _, m := range st.Timeline {
		b.Timeline = append(b.Timeline, apiMoment{At: m.At, Phase: m.Phase, Detail: m.Detail})
	}
	if p := st.Pending; p != nil {
		b.Pending = &apiPending{Reason: p.Words, KueueMessage: p.Raw, Flavor: p.Flavor, Resource: p.Resource, Needed: p.Needed,
			TeamUsed: p.TeamUsed, TeamNominal: p.TeamNominal, CohortLendable: p.CohortLendable,
			PositionLocal: p.PositionLocal, PositionCluster: p.PositionCluster}
	}
	if st.Allocation.Flavor != "" {
		a := st.Allocation
		b.Allocation = &a
	}
	if u := q.GPU; u != nil {
		b.GPU = &apiGPU{HasData: u.HasData, Utilization: u.Utilization, MemoryMiB: u.MemoryMiB, PowerWatts: u.PowerWatts, Idle: u.Idle}
	}
	rows := q.Runs
	if q.Ongoing != nil {
		rows = append(rows, *q.Ongoing)
	}
	if len(rows) > 0 {
		s := cost.Summarize(rows, time.Time{}, time.Time{}, 0).Spend
		b.Cost = &s
	}
	c.JSON(http.StatusOK, b)
}

// apiTeamStatus is the team page as JSON.
func (h *handler) apiTeamStatus(c *gin.Context) {
	u, _ := auth.CurrentUser(c)
	team := c.Param("team")
	if !canSeeTeam(u, team) {
		h.fail(c, errNotYourTeam)
		return
	}
	ts, err := h.teamStatusOf(c.Request.Context(), team)
	if err != nil {
		h.fail(c, err)
		return
	}
	ts.Month.Ledger = nil
	body := gin.H{"team": team, "queue": ts.Queue, "month": ts.Month, "running": ts.Running, "waits": ts.Waits}
	if ts.QueueErr != nil {
		body["queueError"] = describe(ts.QueueErr).Message
	}
	c.JSON(http.StatusOK, body)
}

// apiTeamLedger is the team's ledger as JSON (?from=&to= dates, default this month).
func (h *handler) apiTeamLedger(c *gin.Context) {
	u, _ := auth.CurrentUser(c)
	team := c.Param("team")
	if !canSeeTeam(u, team) {
		h.fail(c, errNotYourTeam)
		return
	}
	from, to := h.ledgerRange(c)
	rows, err := h.Status.Costs.LedgerRows(c.Request.Context(), team, from, to)
	if err != nil {
		h.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"team": team, "from": from, "to": to, "runs": rows})
}

// apiClusterStatus is the cluster page as JSON, for admins.
func (h *handler) apiClusterStatus(c *gin.Context) {
	u, _ := auth.CurrentUser(c)
	if u.Role != auth.RoleAdmin {
		h.fail(c, errNotAdmin)
		return
	}
	cs, err := h.clusterStatusOf(c.Request.Context())
	if err != nil {
		h.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, cs)
}
