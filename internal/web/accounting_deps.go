package web

import (
	"context"
	"github.com/gantry-dev/gantry/internal/problem"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/auth"
	"github.com/gantry-dev/gantry/internal/cost"
	"github.com/gantry-dev/gantry/internal/store"
)

// AccountingService records verdicts on results, the teams' acceptance
// rules and the month's shared costs, and computes cost per accepted unit.
type AccountingService interface {
	Team(ctx context.Context, team string, month time.Time, trend int) (cost.TeamAccounting, error)
	Weeks(ctx context.Context, weeks int) ([]cost.TeamWeeks, error)
	JobResult(ctx context.Context, team, namespace, job, kind string) (cost.JobResult, error)
	Decide(ctx context.Context, by cost.Actor, team, namespace, job, verdict, note string) (store.RunVerdict, error)
	SetRule(ctx context.Context, by cost.Actor, team string, on bool) (cost.RuleState, error)
	SharedCosts(ctx context.Context, month time.Time) (cost.SharedCostsPage, error)
	SetSharedCost(ctx context.Context, by cost.Actor, in cost.SharedCostInput) (store.PoolSharedCost, error)
	SetComparison(ctx context.Context, by cost.Actor, in cost.ComparisonInput) (store.CostComparison, error)
}

var (
	// errAccountingOff answers 404 where no accounting service is configured.
	errAccountingOff = problem.New("accounting is not configured", problem.Problem{Kind: problem.NotFound, Title: "Not found",
		Detail: "Accepted results and shared costs are not switched on in this portal."})
	// errNotOwnerOrLead refuses a verdict from someone who neither launched
	// the job nor leads its team.
	errNotOwnerOrLead = problem.New("only the job's owner, a lead of its team or an admin may judge its result", problem.Problem{Kind: problem.Forbidden, Title: "Not allowed",
		Detail: "Only the job's owner, a lead of its team or an admin can accept or reject its result."})
	// errNotLead refuses a team setting to someone who does not lead the team.
	errNotLead = problem.New("only a lead of the team or an admin may change this", problem.Problem{Kind: problem.Forbidden, Title: "Not allowed",
		Detail: "Only a lead of this team or an admin can change the team's acceptance rule."})
)

// accounting is the accounting service, or errAccountingOff.
func (h *handler) accounting() (AccountingService, error) {
	if h.Status == nil || h.Status.Accounting == nil {
		return nil, errAccountingOff
	}
	return h.Status.Accounting, nil
}

func accountingActor(c *gin.Context, u *auth.User) cost.Actor {
	return cost.Actor{Username: u.Username, Via: u.Via(), IP: c.ClientIP()}
}

// leads reports whether the user leads team (admins lead every team).
func leads(u *auth.User, team string) bool {
	if u.Role == auth.RoleAdmin {
		return true
	}
	for _, m := range u.Teams {
		if m.Team == team && m.Lead {
			return true
		}
	}
	return false
}

// mayJudge reports whether the user may accept or reject the job's result.
func mayJudge(u *auth.User, rec store.Launch) bool {
	return rec.Owner == u.Username || leads(u, rec.Team)
}

// judge is the rule of verdicts (jobOf): the job's owner, its team's leads and admins.
func judge(u *auth.User, rec store.Launch) error {
	if !mayJudge(u, rec) {
		return errNotOwnerOrLead
	}
	return nil
}

// leadsTeam is the rule of team settings (teamOf): the team's leads and admins.
func leadsTeam(u *auth.User, team string) error {
	if !leads(u, team) {
		return errNotLead
	}
	return nil
}

// monthParam reads ?month=2026-11; this month when absent.
func (h *handler) monthParam(c *gin.Context) (time.Time, error) {
	m := c.Query("month")
	if m == "" {
		return cost.MonthStart(h.Now()), nil
	}
	return cost.ParseMonth(m)
}
