package web

import (
	"errors"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/auth"
	"github.com/gantry-dev/gantry/internal/kube"
	"github.com/gantry-dev/gantry/internal/naming"
	"github.com/gantry-dev/gantry/internal/queue"
	"github.com/gantry-dev/gantry/views"
)

// home shows the user's teams with their queues and GPU quota, or the
// "you are not in any team" page.
func (h *handler) home(c *gin.Context) {
	u, _ := auth.CurrentUser(c)
	if !u.HasTeam() && u.Role != auth.RoleAdmin {
		h.render(c, http.StatusOK, views.NoTeamPage(h.nav(c, "home"), views.NoTeamProps{
			Username: u.Username,
			Groups:   u.Groups,
		}))
		return
	}
	props := views.HomeProps{Teams: make([]views.TeamCard, 0, len(u.Teams))}
	for _, m := range u.Teams {
		card := views.TeamCard{
			Name:         m.Team,
			DisplayName:  m.DisplayName,
			Role:         views.RoleResearcher,
			Namespace:    naming.Namespace(m.Team),
			ClusterQueue: naming.ClusterQueue(m.Team),
			CostCenter:   m.CostCenter,
		}
		if m.Lead {
			card.Role = views.RoleLead
		}
		if h.Overviews == nil {
			props.ClusterError = "The cluster is not connected, so queues and quota cannot be shown."
		} else if ov, err := h.Overviews.TeamOverview(m.Team); err == nil {
			fillCard(&card, ov)
		} else if !errors.Is(err, kube.ErrNotFound) {
			h.Log.WarnContext(c.Request.Context(), "read team overview", "team", m.Team, "err", err)
			props.ClusterError = "The cluster could not be read just now, so queues and quota may be missing. Try again in a minute."
		}
		props.Teams = append(props.Teams, card)
	}
	h.render(c, http.StatusOK, views.HomePage(h.nav(c, "home"), props))
}

func fillCard(card *views.TeamCard, ov queue.TeamOverview) {
	card.ClusterQueue = ov.ClusterQueue
	if ov.Namespace != "" {
		card.Namespace = ov.Namespace
	}
	card.LocalQueue = ov.LocalQueue
	card.Pending = ov.Pending
	card.Admitted = ov.Admitted
	if !ov.Active {
		card.QueueInactive = ov.InactiveReason
		if card.QueueInactive == "" {
			card.QueueInactive = "Kueue reports the queue as inactive."
		}
	}
	for _, f := range ov.Flavors {
		card.Flavors = append(card.Flavors, views.FlavorQuota{
			Flavor:         f.Flavor,
			Resource:       f.Resource,
			Nominal:        f.Nominal,
			Used:           f.Used,
			Borrowed:       f.Borrowed,
			BorrowingLimit: f.BorrowingLimit,
		})
	}
}
