package web

import (
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/auth"
)

// apiAcceptanceRunCreate is the body of POST /api/v1/acceptance-runs.
type apiAcceptanceRunCreate struct {
	Pool string `json:"pool"`
}

// apiAcceptanceRunsCreate starts a pool's acceptance run (admins and the
// leads of the definition's team) and answers its report, 202 Accepted.
func (h *handler) apiAcceptanceRunsCreate(c *gin.Context) {
	u, _ := auth.CurrentUser(c)
	var body apiAcceptanceRunCreate
	if err := bindJSON(c, &body); err != nil || body.Pool == "" {
		h.apiBadBody(c, err, `Send {"pool": "<pool name>"}.`)
		return
	}
	r, err := h.Acceptance.Start(c.Request.Context(), acceptancePerson(c, u), body.Pool)
	if err != nil {
		h.apiFail(c, err)
		return
	}
	c.Header("Location", "/api/v1/acceptance-runs/"+strconv.FormatInt(r.ID, 10))
	c.JSON(http.StatusAccepted, r)
}
