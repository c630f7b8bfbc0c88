package web

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/auth"
	"github.com/gantry-dev/gantry/internal/cost"
)

// apiSharedCostBody is the body of PUT /api/v1/admin/shared-costs: dollar
// amounts as exact decimal strings.
type apiSharedCostBody struct {
	Month         string `json:"month"`
	Pool          string `json:"pool"`
	NetworkUSD    string `json:"networkUsd,omitempty"`
	StorageUSD    string `json:"storageUsd,omitempty"`
	SupportUSD    string `json:"supportUsd,omitempty"`
	OperationsUSD string `json:"operationsUsd,omitempty"`
}

// apiSharedCostsSet stores a pool's shared costs of a month, as the admin page does.
func (h *handler) apiSharedCostsSet(c *gin.Context) {
	acc, err := h.accounting()
	if err != nil {
		h.fail(c, err)
		return
	}
	u, _ := auth.CurrentUser(c)
	var body apiSharedCostBody
	if err := bindJSON(c, &body); err != nil {
		h.apiBadBody(c, err, `Send a JSON object: {"month": "2026-11", "pool": "<pool>", "networkUsd": "1200.00", "storageUsd": "...", "supportUsd": "...", "operationsUsd": "..."}.`)
		return
	}
	sc, err := acc.SetSharedCost(c.Request.Context(), accountingActor(c, u), cost.SharedCostInput{Month: body.Month, Pool: body.Pool,
		NetworkUSD: body.NetworkUSD, StorageUSD: body.StorageUSD, SupportUSD: body.SupportUSD, OperationsUSD: body.OperationsUSD})
	if err != nil {
		h.apiFail(c, err)
		return
	}
	c.JSON(http.StatusOK, sc)
}
