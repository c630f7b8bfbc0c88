// Package auth signs people in through OpenID Connect, keeps their
// server-side sessions, authenticates personal API tokens and works out
// each user's teams and role from their IdP groups.
package auth

import (
	"context"
	"fmt"
	"slices"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/roster"
	"github.com/gantry-dev/gantry/internal/store"
)

// Role is what a user may do in the portal, from their IdP groups.
type Role int

// Roles, from least to most privileged.
const (
	RoleResearcher Role = iota
	RoleTeamLead
	RoleAdmin
)

// String returns the role as shown to people.
func (r Role) String() string {
	switch r {
	case RoleAdmin:
		return "admin"
	case RoleTeamLead:
		return "team lead"
	default:
		return "researcher"
	}
}

// Membership is a user's place in one team.
type Membership struct {
	Team        string
	DisplayName string
	CostCenter  string
	Lead        bool
}

// User is the signed-in person as handlers see them.
type User struct {
	// ID is the account's row (issuer + subject); Username is for display
	// and impersonation and may be shared by two people.
	ID       int64
	Username string
	Name     string
	Email    string
	// Groups are every IdP group of the last login, for display.
	Groups []string
	// ClusterGroups are the groups the portal maps to a team or to admins:
	// the only ones passed to Kubernetes.
	ClusterGroups []string
	Teams         []Membership
	Role          Role
	// TokenID is the API token the request came with; zero for browser sessions.
	TokenID int64
	// ReadOnly is set when that token may only read.
	ReadOnly bool
}

// Via says how the request was authenticated, for the audit log:
// "browser" or "token:<id>".
func (u *User) Via() string {
	if u.TokenID != 0 {
		return fmt.Sprintf("token:%d", u.TokenID)
	}
	return "browser"
}

// HasTeam reports whether the user belongs to at least one team.
func (u *User) HasTeam() bool { return len(u.Teams) > 0 }

// TeamLister lists the teams that exist now.
type TeamLister interface {
	ActiveTeams(ctx context.Context) ([]roster.Team, error)
}

// Resolver turns a stored user into a User with teams and role.
type Resolver struct {
	Teams       TeamLister
	AdminGroups []string
}

// Resolve computes the user's teams (from the teams' member and lead
// groups) and role (admin, else team lead of any team, else researcher).
func (r Resolver) Resolve(ctx context.Context, u store.User) (*User, error) {
	teams, err := r.Teams.ActiveTeams(ctx)
	if err != nil {
		return nil, fmt.Errorf("resolve teams of %s: %w", u.Username, err)
	}
	return r.resolveWith(u, teams), nil
}

// resolveWith is Resolve with the active teams already read.
func (r Resolver) resolveWith(u store.User, teams []roster.Team) *User {
	out := &User{
		ID:       u.ID,
		Username: u.Username,
		Name:     u.Name,
		Email:    u.Email,
		Groups:   slices.Clone([]string(u.Groups)),
		Role:     RoleResearcher,
	}
	if out.Name == "" {
		out.Name = u.Username
	}
	mapped := map[string]bool{}
	for _, t := range teams {
		lead := overlaps(u.Groups, t.LeadGroups)
		if lead || overlaps(u.Groups, t.MemberGroups) {
			out.Teams = append(out.Teams, Membership{Team: t.Name, DisplayName: t.DisplayName, CostCenter: t.CostCenter, Lead: lead})
			if lead {
				out.Role = RoleTeamLead
			}
		}
		for _, g := range slices.Concat(t.MemberGroups, t.LeadGroups) {
			mapped[g] = true
		}
	}
	if overlaps(u.Groups, r.AdminGroups) {
		out.Role = RoleAdmin
	}
	for _, g := range r.AdminGroups {
		mapped[g] = true
	}
	for _, g := range u.Groups {
		if mapped[g] && !slices.Contains(out.ClusterGroups, g) {
			out.ClusterGroups = append(out.ClusterGroups, g)
		}
	}
	return out
}

// HasAccess reports whether the user's groups map to any team or to the
// admins; API tokens of a user without access stop working.
func (u *User) HasAccess() bool { return u.HasTeam() || u.Role == RoleAdmin }

func overlaps(a, b []string) bool {
	for _, x := range a {
		if slices.Contains(b, x) {
			return true
		}
	}
	return false
}

// userKey is the gin context key of the current user; unexported so only
// this package's accessors can set or read it.
type userKey struct{}

// SetCurrentUser attaches the authenticated user to the request.
func SetCurrentUser(c *gin.Context, u *User) {
	c.Set(userKey{}, u)
}

// CurrentUser returns the authenticated user of the request, if any.
func CurrentUser(c *gin.Context) (*User, bool) {
	v, ok := c.Get(userKey{})
	if !ok {
		return nil, false
	}
	u, ok := v.(*User)
	return u, ok && u != nil
}
