package web

import (
	"net/http"

	"github.com/gantry-dev/gantry/internal/cost"
	"github.com/gantry-dev/gantry/internal/store"
)

// accountingOperations documents accepted results, cost per accepted unit
// and shared costs.
func accountingOperations() []apiOperation {
	month := []apiQueryParam{{"month", "string", "YYYY-MM (default: this month)"}}
	return []apiOperation{
		{Method: http.MethodPost, Path: "/teams/:team/jobs/:name/verdict", Tag: "cost",
			Summary: "Accept or reject a job's result, with an optional note; accepted results are the units of the team's cost per accepted run. Audited.",
			Who:     "the job's owner, leads of its team, and admins",
			Body:    apiVerdictBody{}, Status: http.StatusOK, Response: store.RunVerdict{}, Errors: []int{400, 401, 403, 404, 422}},
		{Method: http.MethodPut, Path: "/teams/:team/acceptance-rule", Tag: "cost",
			Summary: "Turn on or off the team's rule that accepts its succeeded runs unless someone rejects them. Audited.",
			Who:     "leads of the team in the path, and admins",
			Body:    apiAcceptanceRuleBody{}, Status: http.StatusOK, Response: cost.RuleState{}, Errors: []int{400, 401, 403, 404}},
		{Method: http.MethodGet, Path: "/teams/:team/cost", Tag: "cost",
			Summary: "The team's cost per accepted unit for a month with the terms side by side (useful, idle, unmeasured, failed, shared network/storage/support/operations), " +
				"the trend over months, the comparison with the admin's alternative, and why GPUs were idle (by job, owner, kind; reclaimed; failed cost by cause).",
			Who: whoMember, Query: month, Status: http.StatusOK, Response: cost.TeamAccounting{}, Errors: []int{401, 404, 422}},
		{Method: http.MethodGet, Path: "/admin/shared-costs", Tag: "cost", Summary: "The shared costs entered per pool for a month, and the comparison in effect then.",
			Who: whoAdmin, Query: month, Status: http.StatusOK, Response: cost.SharedCostsPage{}, Errors: []int{401, 403, 422}},
		{Method: http.MethodPut, Path: "/admin/shared-costs", Tag: "cost",
			Summary: "Enter a pool's network, storage, support and operations costs for a month (exact decimal dollars); teams carry them by their GPU-hours in the pool. Audited.",
			Who:     whoAdmin, Body: apiSharedCostBody{}, Status: http.StatusOK, Response: store.PoolSharedCost{}, Errors: []int{400, 401, 403, 422}},
		{Method: http.MethodPut, Path: "/admin/cost-comparison", Tag: "cost",
			Summary: "Enter the alternative the cluster is compared with from a month on: a rental price per GPU-hour, a model API price per million tokens, or both. Audited.",
			Who:     whoAdmin, Body: apiCostComparisonBody{}, Status: http.StatusOK, Response: store.CostComparison{}, Errors: []int{400, 401, 403, 422}},
		{Method: http.MethodGet, Path: "/cluster/weekly-hours", Tag: "cost",
			Summary: "The cluster page's weekly chart as figures: every team's useful, idle and failed GPU-hours per week, by the week runs ended.",
			Who:     whoAdmin, Status: http.StatusOK, Response: apiClusterWeeks{}, Errors: []int{401, 403}},
	}
}
