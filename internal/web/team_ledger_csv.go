package web

import (
	"encoding/csv"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/store"
)

// ledgerHeader is the CSV export's header row.
var ledgerHeader = []string{"run_key", "team", "namespace", "job", "kind", "flavor", "resource", "gpus",
	"created_at", "admitted_at", "ended_at", "outcome", "wait_seconds", "allocated_gpu_hours",
	"avg_utilization_percent", "usd_per_hour", "cost_usd", "reason"}

// teamLedgerCSV exports the team's ledger for billing: ?from=2026-01-01&to=2026-02-01
// (default: this month).
func (h *handler) teamLedgerCSV(c *gin.Context) {
	_, team, ok := h.teamOf(c)
	if !ok {
		return
	}
	from, to := h.ledgerRange(c)
	rows, err := h.Status.Costs.LedgerRows(c.Request.Context(), team, from, to)
	if err != nil {
		h.fail(c, err)
		return
	}
	c.Header("Content-Type", "text/csv; charset=utf-8")
	c.Header("Content-Disposition", `attachment; filename="gantry-ledger-`+team+"-"+from.Format("2006-01-02")+`.csv"`)
	c.Status(http.StatusOK)
	w := csv.NewWriter(c.Writer)
	_ = w.Write(ledgerHeader)
	for _, r := range rows {
		_ = w.Write(ledgerRecord(r))
	}
	w.Flush()
	if err := w.Error(); err != nil {
		h.Log.WarnContext(c.Request.Context(), "write ledger CSV", "team", team, "err", err)
	}
}

// ledgerRange reads ?from and ?to (dates); default is the month to date.
func (h *handler) ledgerRange(c *gin.Context) (time.Time, time.Time) {
	now := h.Now().UTC()
	from := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	to := now.Add(time.Second)
	if t, err := time.Parse("2006-01-02", c.Query("from")); err == nil {
		from = t
	}
	if t, err := time.Parse("2006-01-02", c.Query("to")); err == nil {
		to = t
	}
	return from, to
}

func ledgerRecord(r store.LedgerRow) []string {
	util := ""
	if r.AvgUtilization != nil {
		util = strconv.FormatFloat(*r.AvgUtilization, 'f', 1, 64)
	}
	ts := func(t time.Time) string { return t.UTC().Format(time.RFC3339) }
	return []string{r.RunKey, r.Team, r.Namespace, r.JobName, r.JobKind, r.Flavor, r.Resource, strconv.FormatInt(r.GPUs, 10),
		ts(r.CreatedAt), ts(r.AdmittedAt), ts(r.EndedAt), r.Outcome, strconv.FormatFloat(r.WaitSeconds, 'f', 1, 64),
		strconv.FormatFloat(r.AllocatedGPUHours, 'f', 6, 64), util, r.USDPerHour.Decimal(),
		r.CostUSD.Decimal(), r.Reason}
}
