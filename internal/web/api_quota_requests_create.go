package web

import (
	"errors"
	"maps"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/auth"
	"github.com/gantry-dev/gantry/internal/problem"
	"github.com/gantry-dev/gantry/internal/quota"
)

// apiQuotaRequestBody is the body of POST /api/v1/teams/{team}/quota-requests.
type apiQuotaRequestBody struct {
	Flavor   string `json:"flavor"`
	Resource string `json:"resource"`
	// GPUs is the change asked for: more (positive) or fewer (negative).
	GPUs int64 `json:"gpus"`
	// Until is the last day (YYYY-MM-DD) or an RFC 3339 time; empty means until revoked.
	Until  string `json:"until"`
	Reason string `json:"reason"`
}

// apiQuotaRequestsCreate files a quota request for the team in the path,
// with the page's rules and sentences.
func (h *handler) apiQuotaRequestsCreate(c *gin.Context) {
	u, _ := auth.CurrentUser(c)
	var body apiQuotaRequestBody
	if err := bindJSON(c, &body); err != nil {
		h.apiBadBody(c, err, `Send a JSON object: {"flavor","resource","gpus","until","reason"}.`)
		return
	}
	in := quota.NewRequest{Team: c.Param("team"), Flavor: strings.TrimSpace(body.Flavor), Resource: strings.TrimSpace(body.Resource),
		Delta: body.GPUs, Reason: body.Reason}
	if until := strings.TrimSpace(body.Until); until != "" {
		t, err := time.Parse(time.DateOnly, until)
		if err != nil {
			t, err = time.Parse(time.RFC3339, until)
		}
		if err != nil {
			h.apiInvalid(c, map[string]string{quota.FieldUntil: "Enter the end date as YYYY-MM-DD, or leave it empty for until revoked."})
			return
		}
		in.Until = &t
	}
	r, err := h.Quota.Workflow.File(c.Request.Context(), quotaActor(c, u), in)
	var verr problem.Fields
	if errors.As(err, &verr) {
		// The form's "delta" is this body's "gpus".
		fields := maps.Clone(verr)
		if msg, ok := fields[quota.FieldDelta]; ok {
			delete(fields, quota.FieldDelta)
			fields["gpus"] = msg
		}
		h.apiFail(c, fields)
		return
	}
	if err != nil {
		h.apiFail(c, err)
		return
	}
	c.JSON(http.StatusCreated, apiQuotaRequestOf(r))
}
