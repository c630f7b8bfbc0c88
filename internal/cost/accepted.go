package cost

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/gantry-dev/gantry/internal/audit"
	"github.com/gantry-dev/gantry/internal/money"
	"github.com/gantry-dev/gantry/internal/problem"
	"github.com/gantry-dev/gantry/internal/store"
)

// Audit actions of accepted results and shared costs.
const (
	ActionVerdict        = "run.verdict"
	ActionAcceptanceRule = "team.acceptance-rule"
	ActionSharedCost     = "cost.shared"
	ActionComparison     = "cost.comparison"
)

// Actor is who changes accounting data, for the audit log.
type Actor struct {
	Username string
	// Via is "browser" or "token:<id>".
	Via, IP string
}

// AccountingStore is the database side of cost per accepted unit.
type AccountingStore interface {
	AccountedRuns(ctx context.Context, team string, from, to time.Time) ([]store.AccountedRun, error)
	RunHoursBetween(ctx context.Context, from, to time.Time) ([]store.RunHours, error)
	PoolHours(ctx context.Context, from, to time.Time) ([]store.PoolMonthHours, error)
	PoolSharedCosts(ctx context.Context, from, to time.Time) ([]store.PoolSharedCost, error)
	TeamVerdicts(ctx context.Context, team string) ([]store.DatedVerdict, error)
	TeamAcceptanceRule(ctx context.Context, team string) (store.AcceptanceRule, error)
	CostComparisons(ctx context.Context) ([]store.CostComparison, error)
	SetVerdict(ctx context.Context, v store.RunVerdict) (store.RunVerdict, error)
	Verdict(ctx context.Context, namespace, job string) (store.RunVerdict, error)
	JobRuns(ctx context.Context, namespace, job string) ([]store.LedgerRow, error)
	SetAcceptanceRule(ctx context.Context, team string, on bool, by string, at time.Time) (store.AcceptanceRule, bool, error)
	SetPoolSharedCost(ctx context.Context, c store.PoolSharedCost) (store.PoolSharedCost, error)
	SetCostComparison(ctx context.Context, c store.CostComparison) (store.CostComparison, error)
}

// EndpointUsageSource reads what inference endpoints' proxies served: the
// hourly request and token counts the endpoint proxy keeps in Postgres.
// It is the seam for that proxy's store; nil counts no endpoint units.
type EndpointUsageSource interface {
	EndpointUsage(ctx context.Context, team string, from, to time.Time) ([]EndpointUsage, error)
}

// ReclaimSource reads the GPU time idle reclaim freed (stopped notebooks,
// endpoints scaled down), from the reclaim loop's audit. It is the seam
// for that loop's records; nil leaves reclaimed hours unknown.
type ReclaimSource interface {
	Reclaims(ctx context.Context, team string, from, to time.Time) ([]Reclaim, error)
}

// Accounting computes cost per accepted unit and records verdicts, team
// rules and shared costs, each change audited.
type Accounting struct {
	Store     AccountingStore
	Endpoints EndpointUsageSource
	Reclaims  ReclaimSource
	Audit     *audit.Log
	Now       func() time.Time
	// KeptRules keeps each team's acceptance rule (read by every job page
	// view) until a replica changes one; nil reads it every time.
	KeptRules *store.Kept[store.AcceptanceRule]
	// KeptRuns keeps what a team's accounting reads of the ledger and adds
	// the runs recorded since; nil reads the months every time.
	KeptRuns *KeptRuns
}

// rule is the team's acceptance rule, kept until one changes.
func (a *Accounting) rule(ctx context.Context, team string) (store.AcceptanceRule, error) {
	return a.KeptRules.Get(ctx, team, func(ctx context.Context) (store.AcceptanceRule, error) {
		return a.Store.TeamAcceptanceRule(ctx, team)
	})
}

func (a *Accounting) now() time.Time {
	if a.Now == nil {
		return time.Now().UTC()
	}
	return a.Now().UTC()
}

// TeamAccounting is a team's cost section: the month's cost per accepted
// unit, its trend, why GPUs sat idle, and the team's rule.
type TeamAccounting struct {
	Month UnitCost `json:"month"`
	// Trend is the months before and the month itself, oldest first.
	Trend []UnitCost `json:"trend"`
	Idle  IdleReport `json:"idle"`
	Rule  RuleState  `json:"acceptanceRule"`
	// EndpointsCounted is false while no endpoint usage source is wired:
	// endpoints then have no accepted units.
	EndpointsCounted bool `json:"endpointsCounted"`
	// ReclaimsKnown is false while no reclaim source is wired.
	ReclaimsKnown bool `json:"reclaimsKnown"`
}

// RuleState is a team's acceptance rule as the page and API show it.
type RuleState struct {
	AcceptSucceeded bool       `json:"acceptSucceeded"`
	Since           *time.Time `json:"since"`
	SetBy           string     `json:"setBy"`
}

func ruleState(r store.AcceptanceRule) RuleState {
	s := RuleState{AcceptSucceeded: r.On(), SetBy: r.SetBy}
	if r.On() {
		since := r.AcceptFrom
		s.Since = &since
	}
	return s
}

// teamReadsAtOnce bounds how many of a team's accounting reads run at
// once, so that one recompute leaves connections in the pool for others.
const teamReadsAtOnce = 6

// TrendMonths is how many months the trend shows, the month included.
const TrendMonths = 6

// Team computes a team's cost section for month, with trend months of trend.
func (a *Accounting) Team(ctx context.Context, team string, month time.Time, trend int) (TeamAccounting, error) {
	month = MonthStart(month)
	first := month.AddDate(0, 1-max(1, trend), 0)
	end := NextMonth(month)
	// The reads are independent: they run at once, so a recompute waits
	// for the slowest round trip rather than the sum of thirteen, each of
	// which may wait for a core on a busy machine.
	var (
		g           errgroup.Group
		runs        []store.AccountedRun
		pools       []store.PoolMonthHours
		shared      []store.PoolSharedCost
		verdicts    []store.DatedVerdict
		rule        store.AcceptanceRule
		comparisons []store.CostComparison
		reclaims    []Reclaim
	)
	g.SetLimit(teamReadsAtOnce)
	// Every team's hours per pool divide the pool's shared cost; summed
	// in the database, not read run by run.
	if a.KeptRuns != nil {
		g.Go(func() (err error) { runs, pools, err = a.KeptRuns.Read(ctx, team, first, end); return err })
	} else {
		g.Go(func() (err error) { runs, err = a.Store.AccountedRuns(ctx, team, first, end); return err })
		g.Go(func() (err error) { pools, err = a.Store.PoolHours(ctx, first, end); return err })
	}
	g.Go(func() (err error) { shared, err = a.Store.PoolSharedCosts(ctx, first, end); return err })
	g.Go(func() (err error) { verdicts, err = a.Store.TeamVerdicts(ctx, team); return err })
	g.Go(func() (err error) { rule, err = a.rule(ctx, team); return err })
	g.Go(func() (err error) { comparisons, err = a.Store.CostComparisons(ctx); return err })
	var months []time.Time
	for m := first; !m.After(month); m = NextMonth(m) {
		months = append(months, m)
	}
	endpoints := make([][]EndpointUsage, len(months))
	if a.Endpoints != nil {
		for i, m := range months {
			g.Go(func() (err error) {
				if endpoints[i], err = a.Endpoints.EndpointUsage(ctx, team, m, NextMonth(m)); err != nil {
					return fmt.Errorf("endpoint usage: %w", err)
				}
				return nil
			})
		}
	}
	if a.Reclaims != nil {
		g.Go(func() (err error) {
			if reclaims, err = a.Reclaims.Reclaims(ctx, team, month, end); err != nil {
				return fmt.Errorf("reclaims: %w", err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return TeamAccounting{}, fmt.Errorf("accounting of %s: %w", team, err)
	}
	out := TeamAccounting{Rule: ruleState(rule), EndpointsCounted: a.Endpoints != nil, ReclaimsKnown: a.Reclaims != nil}
	var monthRuns []store.AccountedRun
	for i, m := range months {
		// The runs are oldest first: a month's are a part of them, not a
		// copy (16,700 runs of 440 bytes a month at 50,000 workloads).
		lo := sort.Search(len(runs), func(j int) bool { return !runs[j].EndedAt.Before(m) })
		hi := sort.Search(len(runs), func(j int) bool { return !runs[j].EndedAt.Before(NextMonth(m)) })
		teamRuns := runs[lo:hi:hi]
		poolHours := map[string]float64{}
		for _, p := range pools {
			if p.Month.Equal(m) {
				poolHours[p.Flavor] += p.GPUHours
			}
		}
		in := MonthInput{Team: team, Month: m, Runs: teamRuns, PoolHours: poolHours, Shared: shared,
			Verdicts: verdicts, Rule: rule, Comparison: ComparisonFor(comparisons, m), Endpoints: endpoints[i]}
		out.Trend = append(out.Trend, Account(in))
		monthRuns = teamRuns
	}
	out.Month = out.Trend[len(out.Trend)-1]
	out.Idle = Idle(monthRuns, reclaims, 5)
	return out, nil
}

// TeamWeeks is one team's weekly GPU-hours for the cluster chart.
type TeamWeeks struct {
	Team  string      `json:"team"`
	Weeks []WeekHours `json:"weeks"`
}

// Weeks returns every team's useful, idle and failed GPU-hours of the last
// weeks weeks (the current one included), teams by name.
func (a *Accounting) Weeks(ctx context.Context, weeks int) ([]TeamWeeks, error) {
	first := WeekStart(a.now()).AddDate(0, 0, -7*(weeks-1))
	var byTeam map[string][]WeekHours
	if a.KeptRuns != nil {
		var err error
		if byTeam, err = a.KeptRuns.Weekly(ctx, first, weeks); err != nil {
			return nil, fmt.Errorf("weekly GPU-hours: %w", err)
		}
	} else {
		runs, err := a.Store.RunHoursBetween(ctx, first, first.AddDate(0, 0, 7*weeks))
		if err != nil {
			return nil, fmt.Errorf("weekly GPU-hours: %w", err)
		}
		byTeam = Weekly(runs, first, weeks)
	}
	out := make([]TeamWeeks, 0, len(byTeam))
	for _, t := range slices.Sorted(maps.Keys(byTeam)) {
		out = append(out, TeamWeeks{Team: t, Weeks: byTeam[t]})
	}
	return out, nil
}

// Decide records a verdict on a job's result. Who may decide (its owner,
// a lead of its team, an admin) is the caller's check.
func (a *Accounting) Decide(ctx context.Context, by Actor, team, namespace, job, verdict, note string) (store.RunVerdict, error) {
	note = strings.TrimSpace(note)
	fields := problem.Fields{}
	if verdict != store.VerdictAccepted && verdict != store.VerdictRejected {
		fields["verdict"] = `Choose "accepted" or "rejected".`
	}
	if len(note) > 500 {
		fields["note"] = "Keep the note under 500 characters."
	}
	if len(fields) > 0 {
		return store.RunVerdict{}, fields
	}
	v := store.RunVerdict{Namespace: namespace, JobName: job, Team: team, Verdict: verdict, Note: note, DecidedBy: by.Username, DecidedAt: a.now()}
	before, err := a.Store.SetVerdict(ctx, v)
	if err != nil {
		return store.RunVerdict{}, err
	}
	detail := map[string]any{"team": team, "job": job, "verdict": verdict, "note": note}
	if before.Verdict != "" {
		detail["before"] = before.Verdict
	}
	if err := a.Audit.Record(ctx, audit.Event{Actor: by.Username, Action: ActionVerdict, Target: namespace + "/" + job,
		Detail: detail, IP: by.IP, Via: by.Via}); err != nil {
		return store.RunVerdict{}, err
	}
	return v, nil
}

// SetRule turns a team's rule that accepts succeeded runs on or off. Who
// may (the team's leads, admins) is the caller's check.
func (a *Accounting) SetRule(ctx context.Context, by Actor, team string, on bool) (RuleState, error) {
	r, changed, err := a.Store.SetAcceptanceRule(ctx, team, on, by.Username, a.now())
	if err != nil {
		return RuleState{}, err
	}
	if changed {
		if err := a.Audit.Record(ctx, audit.Event{Actor: by.Username, Action: ActionAcceptanceRule, Target: team,
			Detail: map[string]any{"acceptSucceeded": on}, IP: by.IP, Via: by.Via}); err != nil {
			return RuleState{}, err
		}
	}
	return ruleState(r), nil
}

// SharedCostInput is what an admin enters for a pool's month.
type SharedCostInput struct {
	Month, Pool                                       string
	NetworkUSD, StorageUSD, SupportUSD, OperationsUSD string
}

// SetSharedCost stores a pool's shared costs of a month (admins only: the
// caller's check).
func (a *Accounting) SetSharedCost(ctx context.Context, by Actor, in SharedCostInput) (store.PoolSharedCost, error) {
	fields := problem.Fields{}
	month, err := ParseMonth(in.Month)
	if err != nil {
		fields["month"] = "Give the month as YYYY-MM, for example 2026-11."
	}
	if strings.TrimSpace(in.Pool) == "" {
		fields["pool"] = "Choose the pool the costs belong to."
	}
	amount := func(field, v string) money.USD {
		if strings.TrimSpace(v) == "" {
			return 0
		}
		u, err := money.Parse(v)
		if err != nil || u < 0 {
			fields[field] = fmt.Sprintf("Give the %s cost as dollars with at most six decimals, zero or more.", strings.TrimSuffix(field, "Usd"))
		}
		return u
	}
	c := store.PoolSharedCost{Month: month, Pool: strings.TrimSpace(in.Pool),
		NetworkUSD: amount("networkUsd", in.NetworkUSD), StorageUSD: amount("storageUsd", in.StorageUSD),
		SupportUSD: amount("supportUsd", in.SupportUSD), OperationsUSD: amount("operationsUsd", in.OperationsUSD),
		SetBy: by.Username, SetAt: a.now()}
	if len(fields) > 0 {
		return store.PoolSharedCost{}, fields
	}
	before, err := a.Store.SetPoolSharedCost(ctx, c)
	if err != nil {
		return store.PoolSharedCost{}, err
	}
	if err := a.Audit.Record(ctx, audit.Event{Actor: by.Username, Action: ActionSharedCost, Target: c.Pool + " " + MonthKey(month),
		Detail: map[string]any{"network": c.NetworkUSD.Decimal(), "storage": c.StorageUSD.Decimal(), "support": c.SupportUSD.Decimal(),
			"operations": c.OperationsUSD.Decimal(), "totalBefore": before.Total().Decimal()}, IP: by.IP, Via: by.Via}); err != nil {
		return store.PoolSharedCost{}, err
	}
	return c, nil
}

// ComparisonInput is the alternative an admin enters from a month on.
type ComparisonInput struct {
	Month, Label                                string
	RentalUSDPerGPUHour, APIUSDPerMillionTokens string
}

// SetComparison stores the alternative the cluster is compared with from
// a month on (admins only: the caller's check).
func (a *Accounting) SetComparison(ctx context.Context, by Actor, in ComparisonInput) (store.CostComparison, error) {
	fields := problem.Fields{}
	month, err := ParseMonth(in.Month)
	if err != nil {
		fields["month"] = "Give the month as YYYY-MM, for example 2026-11."
	}
	price := func(field, v, what string) *money.USD {
		if strings.TrimSpace(v) == "" {
			return nil
		}
		u, err := money.Parse(v)
		if err != nil || u < 0 {
			fields[field] = fmt.Sprintf("Give %s as dollars with at most six decimals, zero or more.", what)
			return nil
		}
		return &u
	}
	c := store.CostComparison{Month: month, Label: strings.TrimSpace(in.Label), SetBy: by.Username, SetAt: a.now(),
		RentalUSDPerGPUHour:    price("rentalUsdPerGpuHour", in.RentalUSDPerGPUHour, "the rental price per GPU-hour"),
		APIUSDPerMillionTokens: price("apiUsdPerMillionTokens", in.APIUSDPerMillionTokens, "the API price per million tokens")}
	if len(fields) == 0 && c.RentalUSDPerGPUHour == nil && c.APIUSDPerMillionTokens == nil {
		fields["rentalUsdPerGpuHour"] = "Give a rental price per GPU-hour, a model API price per million tokens, or both."
	}
	if len(c.Label) > 200 {
		fields["label"] = "Keep the name of the alternative under 200 characters."
	}
	if len(fields) > 0 {
		return store.CostComparison{}, fields
	}
	if _, err := a.Store.SetCostComparison(ctx, c); err != nil {
		return store.CostComparison{}, err
	}
	detail := map[string]any{"label": c.Label}
	if c.RentalUSDPerGPUHour != nil {
		detail["rentalUsdPerGpuHour"] = c.RentalUSDPerGPUHour.Decimal()
	}
	if c.APIUSDPerMillionTokens != nil {
		detail["apiUsdPerMillionTokens"] = c.APIUSDPerMillionTokens.Decimal()
	}
	if err := a.Audit.Record(ctx, audit.Event{Actor: by.Username, Action: ActionComparison, Target: MonthKey(month),
		Detail: detail, IP: by.IP, Via: by.Via}); err != nil {
		return store.CostComparison{}, err
	}
	return c, nil
}

// SharedCostsPage is what the admin's shared-costs page lists: the month's
// entries and the comparison in effect.
type SharedCostsPage struct {
	Month      string                 `json:"month"`
	Costs      []store.PoolSharedCost `json:"costs"`
	Comparison *store.CostComparison  `json:"comparison"`
}

// SharedCosts lists the shared costs entered for a month and the comparison in effect then.
func (a *Accounting) SharedCosts(ctx context.Context, month time.Time) (SharedCostsPage, error) {
	month = MonthStart(month)
	costs, err := a.Store.PoolSharedCosts(ctx, month, NextMonth(month))
	if err != nil {
		return SharedCostsPage{}, err
	}
	cs, err := a.Store.CostComparisons(ctx)
	if err != nil {
		return SharedCostsPage{}, err
	}
	return SharedCostsPage{Month: MonthKey(month), Costs: costs, Comparison: ComparisonFor(cs, month)}, nil
}

// JobResult is the verdict on a job's result: a person's, or the team
// rule's when it accepts one of the job's succeeded runs.
type JobResult struct {
	// Verdict is nil when no person decided.
	Verdict *store.RunVerdict `json:"verdict"`
	ByRule  bool              `json:"acceptedByRule"`
}

// JobResult reads the verdict on a job's result; kind is the job's
// template kind (an inference endpoint is never accepted by the rule: its
// units are the requests it served).
func (a *Accounting) JobResult(ctx context.Context, team, namespace, job, kind string) (JobResult, error) {
	rule := store.AcceptanceRule{Team: team}
	if kind != KindInference {
		var err error
		if rule, err = a.rule(ctx, team); err != nil {
			return JobResult{}, err
		}
	}
	// A person's verdict decides; the job's runs matter only when it has
	// none and the team's rule is on. Both are read at once, so the job
	// page waits for one round trip, not two in turn.
	var (
		g      errgroup.Group
		v      store.RunVerdict
		runs   []store.LedgerRow
		vErr   error
		byRule = !rule.AcceptFrom.IsZero()
	)
	g.Go(func() error { v, vErr = a.Store.Verdict(ctx, namespace, job); return nil })
	if byRule {
		g.Go(func() (err error) { runs, err = a.Store.JobRuns(ctx, namespace, job); return err })
	}
	err := g.Wait()
	switch {
	case vErr == nil:
		return JobResult{Verdict: &v}, nil
	case !errors.Is(vErr, store.ErrNotFound):
		return JobResult{}, vErr
	case err != nil:
		return JobResult{}, err
	}
	for _, r := range runs {
		if r.Outcome == OutcomeSucceeded && rule.Covers(r.EndedAt) {
			return JobResult{ByRule: true}, nil
		}
	}
	return JobResult{}, nil
}
