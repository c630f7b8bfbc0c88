package web

import (
	"context"
	"github.com/gantry-dev/gantry/internal/problem"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/auth"
	"github.com/gantry-dev/gantry/internal/quota"
	"github.com/gantry-dev/gantry/internal/roster"
	"github.com/gantry-dev/gantry/internal/store"
	"github.com/gantry-dev/gantry/internal/teams/teamadmin"
)

// QuotaWorkflow files, withdraws and decides quota requests.
type QuotaWorkflow interface {
	File(ctx context.Context, a quota.Actor, in quota.NewRequest) (store.QuotaRequest, error)
	Withdraw(ctx context.Context, a quota.Actor, id int64) (store.QuotaRequest, error)
	Decide(ctx context.Context, a quota.Actor, id int64, approve bool, comment string) (store.QuotaRequest, error)
}

// QuotaBoard reads quota lines and flavors from the informer caches.
type QuotaBoard interface {
	Line(team, flavor, resource string) (quota.Line, error)
	Flavors() ([]quota.FlavorResources, error)
}

// QuotaStore is what the quota, team and audit pages read from the database.
type QuotaStore interface {
	QuotaRequestsBy(ctx context.Context, requester string, limit int) ([]store.QuotaRequest, error)
	OpenQuotaRequests(ctx context.Context, teams []string) ([]store.QuotaRequest, error)
	CountOpenQuotaRequests(ctx context.Context, teams []string, except string) (int, error)
	ActiveGrants(ctx context.Context, teams []string) ([]store.QuotaGrant, error)
	Ceiling(ctx context.Context, team, flavor, resource string) (store.TeamCeiling, error)
	Ceilings(ctx context.Context, team string) ([]store.TeamCeiling, error)
	Notifications(ctx context.Context, username string, limit int) ([]store.Notification, error)
	UnreadNotifications(ctx context.Context, username string) (int, error)
	MarkNotificationsRead(ctx context.Context, username string, at time.Time) error
	AllTeams(ctx context.Context) ([]roster.Team, error)
	TeamByName(ctx context.Context, name string) (roster.Team, error)
	AuditPage(ctx context.Context, q store.AuditQuery) ([]store.AuditEntry, bool, error)
}

// TeamAdmin creates, edits and retires teams.
type TeamAdmin interface {
	Create(ctx context.Context, by teamadmin.Actor, f teamadmin.Form) (roster.Team, error)
	Update(ctx context.Context, by teamadmin.Actor, f teamadmin.Form) (roster.Team, error)
	Retire(ctx context.Context, by teamadmin.Actor, name string) error
}

// QuotaDeps are the collaborators of the quota, approvals, notifications,
// team admin and audit pages.
type QuotaDeps struct {
	Workflow QuotaWorkflow
	Board    QuotaBoard
	Store    QuotaStore
	Teams    TeamAdmin
}

// errNotAdmin refuses a non-admin on an admin page.
var errNotAdmin = problem.New("admins only", problem.Problem{Kind: problem.Forbidden, Title: "Admins only",
	Detail: "Only Gantry admins can open this page."})

// errQuotaOff answers quota pages when the portal runs without them.
var errQuotaOff = problem.New("quota pages are not configured", problem.Problem{Kind: problem.NotFound, Title: "Not available",
	Detail: "Quota requests are not set up on this portal."})

// adminOnly lets only admins through.
func (h *handler) adminOnly(c *gin.Context) {
	if u, ok := auth.CurrentUser(c); ok && u.Role == auth.RoleAdmin {
		c.Next()
		return
	}
	h.fail(c, errNotAdmin)
	c.Abort()
}

// quotaOn answers 404 on quota pages when they are not configured.
func (h *handler) quotaOn(c *gin.Context) {
	if h.Quota == nil {
		h.fail(c, errQuotaOff)
		c.Abort()
		return
	}
	c.Next()
}

// quotaActor is the user as the quota rules see them.
func quotaActor(c *gin.Context, u *auth.User) quota.Actor {
	a := quota.Actor{Username: u.Username, Admin: u.Role == auth.RoleAdmin, IP: c.ClientIP(), Via: u.Via()}
	for _, m := range u.Teams {
		a.MemberOf = append(a.MemberOf, m.Team)
		if m.Lead {
			a.LeadOf = append(a.LeadOf, m.Team)
		}
	}
	return a
}

// decidableTeams are the teams whose requests the user decides; nil means
// all (admins).
func decidableTeams(u *auth.User) []string {
	if u.Role == auth.RoleAdmin {
		return nil
	}
	out := []string{}
	for _, m := range u.Teams {
		if m.Lead {
			out = append(out, m.Team)
		}
	}
	return out
}

func memberTeams(u *auth.User) []string {
	out := []string{}
	for _, m := range u.Teams {
		out = append(out, m.Team)
	}
	return out
}

// navBadgeCounts are the nav's two badges.
type navBadgeCounts struct{ pending, unread int }

// navBadges counts the user's open approvals and unread notifications; a
// failed count shows as none (the page still renders). The counts are kept
// until the tables under them change (h.badges), so most views do not read
// them.
func (h *handler) navBadges(c *gin.Context, u *auth.User) (pending, unread int) {
	if h.Quota == nil || u == nil {
		return 0, 0
	}
	ctx := c.Request.Context()
	lead := u.Role >= auth.RoleTeamLead
	n, err := h.badges.Get(ctx, badgeKey(u), func(ctx context.Context) (navBadgeCounts, error) {
		var n navBadgeCounts
		var err error
		if lead {
			if n.pending, err = h.Quota.Store.CountOpenQuotaRequests(ctx, decidableTeams(u), u.Username); err != nil {
				return n, err
			}
		}
		n.unread, err = h.Quota.Store.UnreadNotifications(ctx, u.Username)
		return n, err
	})
	if err != nil {
		h.Log.WarnContext(ctx, "count the nav's badges", "err", err)
	}
	return n.pending, n.unread
}

// badgeKey names what the user's badges count: their notifications and,
// for a lead, the open requests of the teams they decide for.
func badgeKey(u *auth.User) string {
	if u.Role < auth.RoleTeamLead {
		return u.Username
	}
	if teams := decidableTeams(u); teams != nil {
		return u.Username + "|lead:" + strings.Join(teams, ",")
	}
	return u.Username + "|admin"
}

func pathID(c *gin.Context) (int64, error) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		return 0, errPageNotFound
	}
	return id, nil
}
