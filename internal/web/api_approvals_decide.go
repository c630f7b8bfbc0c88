package web

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/auth"
)

// apiDecisionBody is the body of POST /api/v1/approvals/{id}/decide.
type apiDecisionBody struct {
	// Decision is approve or reject.
	Decision string `json:"decision"`
	Comment  string `json:"comment"`
}

// apiApprovalsDecide approves or rejects a request; an approval changes the
// team's ClusterQueue as the page's does.
func (h *handler) apiApprovalsDecide(c *gin.Context) {
	u, _ := auth.CurrentUser(c)
	// Refused before the body is read: a researcher learns nothing of a request.
	if err := refuseNonDecider(u); err != nil {
		h.fail(c, err)
		return
	}
	id, err := pathID(c)
	if err != nil {
		h.fail(c, err)
		return
	}
	var body apiDecisionBody
	if err := bindJSON(c, &body); err != nil {
		h.apiBadBody(c, err, `Send a JSON object: {"decision": "approve" or "reject", "comment"}.`)
		return
	}
	if body.Decision != "approve" && body.Decision != "reject" {
		h.apiInvalid(c, map[string]string{"decision": `Say "approve" or "reject".`})
		return
	}
	r, err := h.Quota.Workflow.Decide(c.Request.Context(), quotaActor(c, u), id, body.Decision == "approve", body.Comment)
	if err != nil {
		h.apiFail(c, err)
		return
	}
	c.JSON(http.StatusOK, apiQuotaRequestOf(r))
}
