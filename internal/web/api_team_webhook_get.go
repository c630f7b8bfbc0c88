package web

import (
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/auth"
	"github.com/gantry-dev/gantry/internal/notify"
)

// apiWebhook is GET and PUT /api/v1/teams/{team}/webhook: the team's chat
// webhook (url empty when none is set) and its latest deliveries.
type apiWebhook struct {
	URL        string               `json:"url"`
	UpdatedBy  string               `json:"updatedBy,omitempty"`
	UpdatedAt  *time.Time           `json:"updatedAt,omitempty"`
	Deliveries []apiWebhookDelivery `json:"deliveries"`
}

// apiWebhookDelivery is one job ending posted to the webhook.
type apiWebhookDelivery struct {
	Job         string     `json:"job"`
	Ending      string     `json:"ending"`
	CreatedAt   time.Time  `json:"createdAt"`
	Attempts    int        `json:"attempts"`
	DeliveredAt *time.Time `json:"deliveredAt"`
	// GivenUpAt is set when the last attempt failed and no more are made.
	GivenUpAt  *time.Time `json:"givenUpAt"`
	LastError  string     `json:"lastError,omitempty"`
	LastStatus *int       `json:"lastStatus,omitempty"`
}

// apiTeamWebhookGet returns the team's webhook; team leads and admins only,
// as the URL often carries the chat tool's secret.
func (h *handler) apiTeamWebhookGet(c *gin.Context) {
	u, _ := auth.CurrentUser(c)
	team := c.Param("team")
	switch {
	case !canSeeTeam(u, team):
		h.fail(c, errNotYourTeam)
		return
	case !mayChangeWebhook(u, team):
		h.fail(c, notify.ErrNotLead)
		return
	}
	w, err := h.Webhooks.Get(c.Request.Context(), team)
	if err != nil {
		h.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, apiWebhookOf(w))
}

func apiWebhookOf(w notify.TeamWebhook) apiWebhook {
	out := apiWebhook{URL: w.URL, UpdatedBy: w.UpdatedBy, Deliveries: []apiWebhookDelivery{}}
	if !w.UpdatedAt.IsZero() {
		out.UpdatedAt = &w.UpdatedAt
	}
	for _, d := range w.Deliveries {
		out.Deliveries = append(out.Deliveries, apiWebhookDelivery{Job: jobOfPayload(d.Payload), Ending: endingOfPayload(d.Payload),
			CreatedAt: d.CreatedAt, Attempts: d.Attempts, DeliveredAt: d.DeliveredAt, GivenUpAt: d.FailedAt, LastError: d.LastError, LastStatus: d.LastStatus})
	}
	return out
}
