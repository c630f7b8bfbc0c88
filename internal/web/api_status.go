package web

import (
	"net/http"
	"slices"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/auth"
	"github.com/gantry-dev/gantry/internal/cost"
	"github.com/gantry-dev/gantry/internal/queue"
	"github.com/gantry-dev/gantry/internal/store"
)

// apiJobStatusBody is GET /api/v1/teams/{team}/jobs/{name}/status: the
// same status the job page's panel shows.
type apiJobStatusBody struct {
	Team       string         `json:"team"`
	Name       string         `json:"name"`
	Phase      queue.Phase    `json:"phase"`
	Message    string         `json:"message,omitempty"`
	Cause      *apiCause      `json:"cause,omitempty"`
	Timeline   []apiMoment    `json:"timeline"`
	Pending    *apiPending    `json:"pending,omitempty"`
	WaitedSec  float64        `json:"waitedSeconds"`
	TypicalSec float64        `json:"typicalWaitSeconds,omitempty"`
	Allocation *apiAllocation `json:"allocation,omitempty"`
	Eviction   *apiEviction   `json:"eviction,omitempty"`
	Failure    *apiFailure    `json:"failure,omitempty"`
	GPU        *apiGPU        `json:"gpu,omitempty"`
	Cost       *cost.Spend    `json:"cost,omitempty"`
	// Attempts lists every attempt of the job, oldest first.
	Attempts []apiAttempt `json:"attempts"`
	// Stale is set while the Kubernetes API server does not answer.
	Stale *apiStale `json:"stale,omitempty"`
}

// apiCause is why a job ended and what to do next. RelaunchURL opens the
// launch form pre-filled from the run, with the fix applied.
type apiCause struct {
	Kind        queue.CauseKind `json:"kind"`
	Words       string          `json:"words"`
	Next        string          `json:"next"`
	Fix         *apiFix         `json:"fix,omitempty"`
	LogTail     []string        `json:"logTail,omitempty"`
	LogTailNote string          `json:"logTailNote,omitempty"`
	Pod         string          `json:"pod,omitempty"`
	Container   string          `json:"container,omitempty"`
	Node        string          `json:"node,omitempty"`
	Requeued    bool            `json:"requeued"`
	RelaunchURL string          `json:"relaunchUrl,omitempty"`
}

type apiFix struct {
	Field string `json:"field"`
	Value string `json:"value"`
	Words string `json:"words"`
}

type apiAllocation struct {
	Flavor   string   `json:"flavor"`
	Resource string   `json:"resource"`
	Count    int64    `json:"count"`
	MIG      bool     `json:"mig"`
	Nodes    []string `json:"nodes"`
}

type apiEviction struct {
	At                     time.Time `json:"at"`
	Preempted              bool      `json:"preempted"`
	Reason                 string    `json:"reason"`
	Message                string    `json:"message"`
	PreemptedBy            string    `json:"preemptedBy,omitempty"`
	PreemptorTeam          string    `json:"preemptorTeam,omitempty"`
	PreemptorPriorityClass string    `json:"preemptorPriorityClass,omitempty"`
	PreemptorPriority      int32     `json:"preemptorPriority,omitempty"`
	Reclaimed              bool      `json:"reclaimed"`
	Requeued               bool      `json:"requeued"`
}

type apiFailure struct {
	Pod       string `json:"pod"`
	Container string `json:"container"`
	ExitCode  int32  `json:"exitCode"`
	Reason    string `json:"reason,omitempty"`
	Message   string `json:"message,omitempty"`
	OOMKilled bool   `json:"oomKilled"`
}

type apiMoment struct {
	At     time.Time   `json:"at"`
	Phase  queue.Phase `json:"phase"`
	Detail string      `json:"detail,omitempty"`
}

type apiPending struct {
	Reason          string `json:"reason"`
	KueueMessage    string `json:"kueueMessage"`
	Flavor          string `json:"flavor,omitempty"`
	Resource        string `json:"resource,omitempty"`
	Needed          int64  `json:"needed"`
	TeamReserved    int64  `json:"teamUsed"`
	TeamNominal     int64  `json:"teamNominal"`
	CohortLendable  int64  `json:"cohortLendable"`
	PositionLocal   int    `json:"positionInLocalQueue"`
	PositionCluster int    `json:"positionInClusterQueue"`
	// PositionsAsOf is when the positions were read, set only while
	// Kueue's visibility API does not answer and they are an older copy.
	PositionsAsOf *time.Time `json:"positionsAsOf,omitempty"`
}

type apiGPU struct {
	HasData     bool    `json:"hasData"`
	Utilization float64 `json:"utilizationPercent"`
	MemoryMiB   float64 `json:"memoryUsedMiB"`
	PowerWatts  float64 `json:"powerWatts"`
	Idle        bool    `json:"idle"`
	// MeasuredAt is the instant the figures are of.
	MeasuredAt time.Time `json:"measuredAt,omitzero"`
}

// apiJobStatus is a job's status as JSON: phase, cause and next step,
// queue, GPU and cost.
func (h *handler) apiJobStatus(c *gin.Context) {
	u, rec, ok := h.jobOf(c)
	if !ok {
		return
	}
	h.readJobTogether(c, rec)
	q, err := h.jobQueueOf(c.Request.Context(), rec, h.failureLogTail(u))
	if err != nil {
		h.fail(c, err)
		return
	}
	body := apiJobStatusOf(rec, q)
	attempts, err := h.jobAttempts(c.Request.Context(), rec.Namespace, rec.Name)
	if err != nil {
		h.fail(c, err)
		return
	}
	body.Attempts = apiAttemptsOf(attempts)
	body.Stale = h.apiStaleOf()
	c.JSON(http.StatusOK, body)
}

func apiJobStatusOf(rec store.Launch, q jobQueue) apiJobStatusBody {
	st := q.Status
	b := apiJobStatusBody{Team: rec.Team, Name: rec.Name, Phase: st.Phase, Message: st.Message, WaitedSec: st.Waited.Seconds(),
		TypicalSec: q.TypicalWait.Seconds(), Timeline: []apiMoment{}}
	if cs := st.Cause; cs != nil {
		b.Cause = &apiCause{Kind: cs.Kind, Words: cs.Words, Next: cs.Next, LogTail: cs.LogTail, LogTailNote: cs.LogTailNote, Pod: cs.Pod, Container: cs.Container,
			Node: cs.Node, Requeued: cs.Requeued}
		if cs.Fix != nil {
			b.Cause.Fix = &apiFix{Field: cs.Fix.Field, Value: cs.Fix.Value, Words: cs.Fix.Words}
		}
		if v := causeView(rec, cs); v.RelaunchURL != "" {
			b.Cause.RelaunchURL = v.RelaunchURL
		}
	}
	for _, m := range st.Timeline {
		b.Timeline = append(b.Timeline, apiMoment{At: m.At, Phase: m.Phase, Detail: m.Detail})
	}
	if p := st.Pending; p != nil {
		b.Pending = &apiPending{Reason: p.Words, KueueMessage: p.Raw, Flavor: p.Flavor, Resource: p.Resource, Needed: p.Needed,
			TeamReserved: p.TeamReserved, TeamNominal: p.TeamNominal, CohortLendable: p.CohortLendable,
			PositionLocal: p.PositionLocal, PositionCluster: p.PositionCluster}
		if !p.PositionsAsOf.IsZero() {
			b.Pending.PositionsAsOf = &p.PositionsAsOf
		}
	}
	if a := st.Allocation; a.Flavor != "" {
		b.Allocation = &apiAllocation{Flavor: a.Flavor, Resource: a.Resource, Count: a.Count, MIG: a.MIG, Nodes: a.Nodes}
	}
	if e := st.Eviction; e != nil {
		b.Eviction = &apiEviction{At: e.At, Preempted: e.Preempted, Reason: e.Reason, Message: e.Message, PreemptedBy: e.PreemptedBy,
			PreemptorTeam: e.PreemptorTeam, PreemptorPriorityClass: e.PreemptorPriorityClass, PreemptorPriority: e.PreemptorPriority,
			Reclaimed: e.Reclaimed, Requeued: e.Requeued}
	}
	if f := st.Failure; f != nil {
		b.Failure = &apiFailure{Pod: f.Pod, Container: f.Container, ExitCode: f.ExitCode, Reason: f.Reason, Message: f.Message, OOMKilled: f.OOMKilled}
	}
	if u := q.GPU; u != nil {
		b.GPU = &apiGPU{HasData: u.HasData, Utilization: u.Utilization, MemoryMiB: u.MemoryMiB, PowerWatts: u.PowerWatts, Idle: u.Idle, MeasuredAt: u.At}
	}
	rows := slices.Clone(q.Runs)
	if q.Ongoing != nil {
		rows = append(rows, *q.Ongoing)
	}
	if len(rows) > 0 {
		s := cost.Summarize(rows, time.Time{}, time.Time{}, 0).Spend
		b.Cost = &s
	}
	return b
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
	if r, ok, err := h.teamRecovery(c.Request.Context(), team); err != nil {
		h.fail(c, err)
		return
	} else if ok {
		body["recovery"] = apiRecovery{Days: recoveryDays, Count: r.Count, MedianSeconds: r.Median.Seconds(), P90Seconds: r.P90.Seconds()}
	}
	if s := h.apiStaleOf(); s != nil {
		body["stale"] = s
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
	cs.Stale = h.apiStaleOf()
	c.JSON(http.StatusOK, cs)
}
