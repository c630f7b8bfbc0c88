package web

import (
	"net/http"

	"github.com/gin-gonic/gin"
)

// apiVerdictBody is the body of POST /api/v1/teams/{team}/jobs/{name}/verdict.
type apiVerdictBody struct {
	Verdict string `json:"verdict"`
	Note    string `json:"note,omitempty"`
}

// apiJobsVerdict accepts or rejects a job's result, as the page's buttons do.
func (h *handler) apiJobsVerdict(c *gin.Context) {
	acc, err := h.accounting()
	if err != nil {
		h.fail(c, err)
		return
	}
	u, rec, ok := h.jobOf(c, judge)
	if !ok {
		return
	}
	var body apiVerdictBody
	if err := bindJSON(c, &body); err != nil {
		h.apiBadBody(c, err, `Send a JSON object: {"verdict": "accepted" or "rejected", "note": "<optional>"}.`)
		return
	}
	v, err := acc.Decide(c.Request.Context(), accountingActor(c, u), rec.Team, rec.Namespace, rec.Name, body.Verdict, body.Note)
	if err != nil {
		h.apiFail(c, err)
		return
	}
	c.JSON(http.StatusOK, v)
}
