package web

import (
	"net/http"

	"github.com/gantry-dev/gantry/internal/acceptance"
)

// apiAcceptanceDefinitionList is GET /api/v1/acceptance-definitions.
type apiAcceptanceDefinitionList struct {
	Definitions []acceptance.Definition `json:"definitions"`
}

// apiAcceptanceRunList is GET /api/v1/acceptance-runs.
type apiAcceptanceRunList struct {
	Runs []acceptance.Report `json:"runs"`
}

// acceptanceOperations document pool acceptance definitions and runs.
func acceptanceOperations() []apiOperation {
	return []apiOperation{
		{Method: http.MethodGet, Path: "/acceptance-definitions", Tag: "acceptance",
			Summary: "Every pool's acceptance definition: what its run launches and the thresholds of the seven steps.", Who: whoAdmin,
			Status: http.StatusOK, Response: apiAcceptanceDefinitionList{}, Errors: []int{401, 403}},
		{Method: http.MethodPut, Path: "/acceptance-definitions/:pool", Tag: "acceptance",
			Summary: "Define or replace a pool's acceptance run (the pool in the path wins over the body's).", Who: whoAdmin,
			Body: acceptance.Definition{}, Status: http.StatusOK, Response: acceptance.Definition{}, Errors: []int{400, 401, 403, 422}},
		{Method: http.MethodPost, Path: "/acceptance-runs", Tag: "acceptance",
			Summary: "Start a pool's acceptance run: the leader's loop launches the production template through the normal launch path as the caller and takes it through the seven steps.",
			Who:     "admins, and leads of the team the pool's definition names",
			Body:    apiAcceptanceRunCreate{}, Status: http.StatusAccepted, Response: acceptance.Report{}, Errors: []int{400, 401, 403, 409, 422}},
		{Method: http.MethodGet, Path: "/acceptance-runs", Tag: "acceptance",
			Summary: "A pool's runs, newest first (those of teams the caller belongs to; admins see all).", Who: whoSignedIn,
			Query:  []apiQueryParam{{"pool", "string", "the pool (default: every pool)"}},
			Status: http.StatusOK, Response: apiAcceptanceRunList{}, Errors: []int{401}},
		{Method: http.MethodGet, Path: "/acceptance-runs/:id", Tag: "acceptance",
			Summary: "A run's report: the seven steps in order, each with status (passed, failed, running, pending, skipped), figure, threshold and a sentence; the run's cost and useful work per dollar against the baseline.",
			Who:     "members of the team the run's definition names, and admins",
			Status:  http.StatusOK, Response: acceptance.Report{}, Errors: []int{401, 404}},
		{Method: http.MethodGet, Path: "/acceptance-runs/:id/markdown", Tag: "acceptance",
			Summary: "A run's report as a Markdown document (text/markdown).", Who: "members of the team the run's definition names, and admins",
			Status: http.StatusOK, Object: true, Errors: []int{401, 404}},
	}
}
