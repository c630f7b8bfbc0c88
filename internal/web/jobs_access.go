package web

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/gantry-dev/gantry/internal/problem"
	"slices"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/auth"
	"github.com/gantry-dev/gantry/internal/catalog"
	"github.com/gantry-dev/gantry/internal/launch"
	"github.com/gantry-dev/gantry/internal/store"
)

// Launcher launches and changes jobs as the user.
type Launcher interface {
	Template(ctx context.Context, name string, version int) (catalog.Template, error)
	Launch(ctx context.Context, actor launch.Actor, req launch.Request) (launch.Result, error)
	Delete(ctx context.Context, actor launch.Actor, team, name string) error
	Stop(ctx context.Context, actor launch.Actor, team, name string) error
	Resume(ctx context.Context, actor launch.Actor, team, name string) error
	Scale(ctx context.Context, actor launch.Actor, team, name string, replicas int) error
}

// JobReader reads templates, launch records and job status.
type JobReader interface {
	TemplatesFor(ctx context.Context, teams []string) ([]catalog.Template, error)
	Record(ctx context.Context, team, name string) (store.Launch, error)
	// Manifest is what the job's launch applied: Record may leave it out.
	Manifest(ctx context.Context, team, name string) (string, error)
	// Outside finds a workload made in the team's namespace without the
	// portal, with a stand-in record (see launch.IsOutside).
	Outside(team, name string) (store.Launch, launch.Status, error)
	MarkOutside(ctx context.Context, sts []launch.Status) error
	Status(team, name string, kind catalog.Kind) (launch.Status, error)
	JobList(f launch.JobFilter, page, perPage int) (launch.JobPage, error)
}

// errNotYourTeam hides other teams' jobs as if they did not exist.
var errNotYourTeam = problem.New("job of a team the user does not belong to", problem.Problem{Kind: problem.NotFound})

// actorOf is the user as launch sees them, for impersonation and the audit
// log: only the groups the portal maps to a team or to admins reach Kubernetes.
func actorOf(c *gin.Context, u *auth.User) launch.Actor {
	return launch.Actor{Username: u.Username, Groups: u.ClusterGroups, Teams: teamNames(u), Via: u.Via(), IP: c.ClientIP()}
}

func teamNames(u *auth.User) []string {
	out := make([]string, 0, len(u.Teams))
	for _, m := range u.Teams {
		out = append(out, m.Team)
	}
	return out
}

// canSeeTeam reports whether the user may read the team's jobs: members,
// and admins for every team.
func canSeeTeam(u *auth.User, team string) bool {
	return u.Role == auth.RoleAdmin || slices.Contains(teamNames(u), team)
}

func jobURL(team, name string) string { return "/teams/" + team + "/jobs/" + name }

// jobRule says why the signed-in user may not act on the job, or nil.
type jobRule func(u *auth.User, rec store.Launch) error

// jobOf is the job the path's :team and :name name, when the signed-in user
// may see its team and every rule lets them act on it; on false the failure
// page or API error has been sent. Each page action and its API twin say
// their rule once, here.
func (h *handler) jobOf(c *gin.Context, rules ...jobRule) (*auth.User, store.Launch, bool) {
	u, rec, err := h.jobRecord(c)
	return u, rec, h.allowed(c, refusal(u, rec, err, rules))
}

// teamRule says why the signed-in user may not act on the team, or nil.
type teamRule func(u *auth.User, team string) error

// teamOf is the team the path's :team names, when the signed-in user may
// see it and every rule lets them act on it; on false the failure page or
// API error has been sent.
func (h *handler) teamOf(c *gin.Context, rules ...teamRule) (*auth.User, string, bool) {
	u, _ := auth.CurrentUser(c)
	team := c.Param("team")
	var err error
	if !canSeeTeam(u, team) {
		err = errNotYourTeam
	}
	return u, team, h.allowed(c, refusal(u, team, err, rules))
}

// refusal is err, or else the first rule's refusal of u acting on v.
func refusal[T any, R ~func(*auth.User, T) error](u *auth.User, v T, err error, rules []R) error {
	for _, rule := range rules {
		if err != nil {
			break
		}
		err = rule(u, v)
	}
	return err
}

// allowed sends the failure page or API error for err and reports whether
// there was none.
func (h *handler) allowed(c *gin.Context, err error) bool {
	if err != nil {
		h.fail(c, err)
		return false
	}
	return true
}

// jobRecord loads a job's launch record if the user may see its team.
func (h *handler) jobRecord(c *gin.Context) (*auth.User, store.Launch, error) {
	u, _ := auth.CurrentUser(c)
	team, name := c.Param("team"), c.Param("name")
	if !canSeeTeam(u, team) {
		return u, store.Launch{}, errNotYourTeam
	}
	rec, err := h.Jobs.Record(c.Request.Context(), team, name)
	if errors.Is(err, store.ErrNotFound) {
		rec, _, err = h.Jobs.Outside(team, name)
	}
	if err != nil {
		return u, store.Launch{}, err
	}
	return u, rec, nil
}

func isScaleError(err error) bool {
	var se *launch.ScaleError
	return errors.As(err, &se)
}

func jsonInto(raw []byte, v any) error { return json.Unmarshal(raw, v) }
