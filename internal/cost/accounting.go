package cost

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/gantry-dev/gantry/internal/money"
	"github.com/gantry-dev/gantry/internal/store"
)

// KindInference is the template kind whose accepted units are the
// requests or tokens its proxy served, not verdicts on runs.
const KindInference = "inference"

// EndpointUsage is what one inference endpoint's proxy served over a period.
type EndpointUsage struct {
	Namespace, Endpoint string
	Requests            int64
	// Tokens counts the tokens of responses that reported usage; zero when none did.
	Tokens int64
}

// MonthInput is everything a team's cost per accepted unit of one month
// is computed from.
type MonthInput struct {
	Team  string
	Month time.Time
	// Runs are the team's ledger rows that ended in the month.
	Runs []store.AccountedRun
	// PoolHours are every team's allocated GPU-hours per pool in the month,
	// which the pools' shared costs are divided by.
	PoolHours map[string]float64
	Shared    []store.PoolSharedCost
	// Verdicts are all the team's verdicts, dated; those of other months are skipped.
	Verdicts   []store.DatedVerdict
	Rule       store.AcceptanceRule
	Endpoints  []EndpointUsage
	Comparison *store.CostComparison
}

// UnitCost is a team's effective cost of a month, the guide's terms side by
// side, and what one accepted unit cost.
type UnitCost struct {
	Team  string `json:"team"`
	Month string `json:"month"` // 2026-11
	// The terms: GPU compute that did useful work, idle and unmeasured
	// GPU time of runs that did not fail, runs that failed or were
	// preempted or evicted (all of their cost), and the team's share of the
	// pools' shared costs. They add up to TotalUSD.
	UsefulUSD     money.USD `json:"usefulUsd"`
	IdleUSD       money.USD `json:"idleUsd"`
	UnmeasuredUSD money.USD `json:"unmeasuredUsd"`
	FailedUSD     money.USD `json:"failedUsd"`
	NetworkUSD    money.USD `json:"networkUsd"`
	StorageUSD    money.USD `json:"storageUsd"`
	SupportUSD    money.USD `json:"supportUsd"`
	OperationsUSD money.USD `json:"operationsUsd"`
	TotalUSD      money.USD `json:"totalUsd"`

	AllocatedGPUHours float64 `json:"allocatedGpuHours"`

	// Runs: everything but inference endpoints, per accepted run.
	RunsCostUSD  money.USD `json:"runsCostUsd"`
	RunsGPUHours float64   `json:"runsGpuHours"`
	// AcceptedRuns counts jobs accepted by a person or by the team's rule
	// (AcceptedByRule of them); RejectedRuns those a person rejected.
	AcceptedRuns   int `json:"acceptedRuns"`
	AcceptedByRule int `json:"acceptedByRule"`
	RejectedRuns   int `json:"rejectedRuns"`
	// CostPerAcceptedRunUSD is nil while no run was accepted.
	CostPerAcceptedRunUSD *money.USD `json:"costPerAcceptedRunUsd"`

	// Endpoints: inference, per 1,000 requests or per million tokens.
	EndpointCostUSD  money.USD `json:"endpointCostUsd"`
	EndpointRequests int64     `json:"endpointRequests"`
	EndpointTokens   int64     `json:"endpointTokens"`
	// EndpointUnit is "1,000 requests" or "million tokens" (when responses
	// reported usage); EndpointUnits how many of them were served.
	EndpointUnit           string     `json:"endpointUnit"`
	EndpointUnits          float64    `json:"endpointUnits"`
	CostPerEndpointUnitUSD *money.USD `json:"costPerEndpointUnitUsd"`

	// The alternative the admin entered, priced for the same work: renting
	// the runs' GPU-hours, or the model API for the tokens served.
	Alternative             string     `json:"alternative"`
	RentedPerAcceptedRunUSD *money.USD `json:"rentedPerAcceptedRunUsd"`
	APIPerEndpointUnitUSD   *money.USD `json:"apiPerEndpointUnitUsd"`
	Verdict                 string     `json:"verdict"`
}

// Endpoint units.
const (
	UnitThousandRequests = "1,000 requests"
	UnitMillionTokens    = "million tokens"
)

// MonthKey is the month of t as 2026-11.
func MonthKey(t time.Time) string { return t.UTC().Format("2006-01") }

// ParseMonth reads 2026-11 as the first instant of that month in UTC.
func ParseMonth(s string) (time.Time, error) {
	t, err := time.Parse("2006-01", s)
	if err != nil {
		return time.Time{}, fmt.Errorf("month %q: want YYYY-MM", s)
	}
	return t, nil
}

// NextMonth is the first instant of the month after m's.
func NextMonth(m time.Time) time.Time { return MonthStart(m).AddDate(0, 1, 0) }

// Account computes a team's cost per accepted unit for one month.
func Account(in MonthInput) UnitCost {
	from, to := MonthStart(in.Month), NextMonth(in.Month)
	u := UnitCost{Team: in.Team, Month: MonthKey(from)}

	// The ledger terms, and GPU-hours per pool for the shared costs.
	teamPool := map[string]float64{}
	endpointPool := map[string]float64{}
	for _, r := range in.Runs {
		u.AllocatedGPUHours += r.AllocatedGPUHours
		teamPool[r.Flavor] += r.AllocatedGPUHours
		if r.Kind == KindInference {
			endpointPool[r.Flavor] += r.AllocatedGPUHours
			u.EndpointCostUSD += r.CostUSD
		} else {
			u.RunsCostUSD += r.CostUSD
			u.RunsGPUHours += r.AllocatedGPUHours
		}
		if Wasted(r.Outcome) {
			u.FailedUSD += r.CostUSD
			continue
		}
		measured, useful := Hours(r.LedgerRow)
		idle, unmeasured := share(r.LedgerRow, measured-useful), share(r.LedgerRow, r.AllocatedGPUHours-measured)
		u.IdleUSD += idle
		u.UnmeasuredUSD += unmeasured
		u.UsefulUSD += r.CostUSD - idle - unmeasured
	}
	for _, c := range in.Shared {
		if !MonthStart(c.Month).Equal(from) || teamPool[c.Pool] <= 0 || in.PoolHours[c.Pool] <= 0 {
			continue
		}
		part := func(v money.USD) money.USD { return v.Scale(min(1, teamPool[c.Pool]/in.PoolHours[c.Pool])) }
		n, s, p, o := part(c.NetworkUSD), part(c.StorageUSD), part(c.SupportUSD), part(c.OperationsUSD)
		u.NetworkUSD, u.StorageUSD, u.SupportUSD, u.OperationsUSD = u.NetworkUSD+n, u.StorageUSD+s, u.SupportUSD+p, u.OperationsUSD+o
		// Endpoints carry the pool's share by their part of the team's hours there.
		ep := (n + s + p + o).Scale(endpointPool[c.Pool] / teamPool[c.Pool])
		u.EndpointCostUSD += ep
		u.RunsCostUSD += n + s + p + o - ep
	}
	u.TotalUSD = u.UsefulUSD + u.IdleUSD + u.UnmeasuredUSD + u.FailedUSD + u.NetworkUSD + u.StorageUSD + u.SupportUSD + u.OperationsUSD

	// Accepted runs: a person's verdict wins; the rule accepts succeeded
	// runs without one.
	decided := map[[2]string]bool{}
	for _, v := range in.Verdicts {
		decided[[2]string{v.Namespace, v.JobName}] = true
		if v.At.Before(from) || !v.At.Before(to) {
			continue
		}
		switch v.Verdict {
		case store.VerdictAccepted:
			u.AcceptedRuns++
		case store.VerdictRejected:
			u.RejectedRuns++
		}
	}
	byRule := map[[2]string]bool{}
	for _, r := range in.Runs {
		k := [2]string{r.Namespace, r.JobName}
		if r.Kind != KindInference && r.Outcome == OutcomeSucceeded && !decided[k] && in.Rule.Covers(r.EndedAt) {
			byRule[k] = true
		}
	}
	u.AcceptedByRule = len(byRule)
	u.AcceptedRuns += u.AcceptedByRule
	if u.AcceptedRuns > 0 {
		per := u.RunsCostUSD.MulDiv(1, int64(u.AcceptedRuns))
		u.CostPerAcceptedRunUSD = &per
	}

	// Endpoint units: tokens when the responses reported them, else requests.
	for _, e := range in.Endpoints {
		u.EndpointRequests += e.Requests
		u.EndpointTokens += e.Tokens
	}
	switch {
	case u.EndpointTokens > 0:
		u.EndpointUnit, u.EndpointUnits = UnitMillionTokens, float64(u.EndpointTokens)/1e6
		per := u.EndpointCostUSD.MulDiv(1_000_000, u.EndpointTokens)
		u.CostPerEndpointUnitUSD = &per
	case u.EndpointRequests > 0:
		u.EndpointUnit, u.EndpointUnits = UnitThousandRequests, float64(u.EndpointRequests)/1e3
		per := u.EndpointCostUSD.MulDiv(1_000, u.EndpointRequests)
		u.CostPerEndpointUnitUSD = &per
	}

	if c := in.Comparison; c != nil {
		u.Alternative = c.Label
		if c.RentalUSDPerGPUHour != nil && u.AcceptedRuns > 0 {
			// Renting, the same GPU-hours (failed and idle ones too) cost the rental price.
			rented := c.RentalUSDPerGPUHour.For(1, time.Duration(u.RunsGPUHours*float64(time.Hour))).MulDiv(1, int64(u.AcceptedRuns))
			u.RentedPerAcceptedRunUSD = &rented
		}
		if c.APIUSDPerMillionTokens != nil && u.EndpointUnit == UnitMillionTokens {
			api := *c.APIUSDPerMillionTokens
			u.APIPerEndpointUnitUSD = &api
		}
	}
	u.Verdict = u.verdict()
	return u
}

// verdict says whether the cluster beat the alternative this month.
func (u UnitCost) verdict() string {
	var out string
	if u.CostPerAcceptedRunUSD != nil && u.RentedPerAcceptedRunUSD != nil {
		here, rented := *u.CostPerAcceptedRunUSD, *u.RentedPerAcceptedRunUSD
		out = fmt.Sprintf("This month an accepted run cost %s here vs %s rented: %s.", here, rented, cheaper(here, rented, "renting"))
	}
	if u.CostPerEndpointUnitUSD != nil && u.APIPerEndpointUnitUSD != nil {
		here, api := *u.CostPerEndpointUnitUSD, *u.APIPerEndpointUnitUSD
		if out != "" {
			out += " "
		}
		out += fmt.Sprintf("A million tokens served cost %s here vs %s from the model API: %s.", here, api, cheaper(here, api, "the API"))
	}
	return out
}

func cheaper(here, there money.USD, alt string) string {
	switch {
	case here < there:
		return "the cluster is cheaper"
	case here > there:
		return alt + " would have been cheaper"
	}
	return "the same"
}

// ComparisonFor is the comparison in effect in month: the newest entered
// for it or an earlier month; nil when none was.
func ComparisonFor(cs []store.CostComparison, month time.Time) *store.CostComparison {
	var out *store.CostComparison
	for i := range cs {
		if !MonthStart(cs[i].Month).After(MonthStart(month)) && (out == nil || cs[i].Month.After(out.Month)) {
			out = &cs[i]
		}
	}
	return out
}

// IdleShare is one job's, owner's or kind's idle GPU time.
type IdleShare struct {
	Name     string    `json:"name"`
	GPUHours float64   `json:"gpuHours"`
	USD      money.USD `json:"usd"`
}

// CauseCost is what runs that ended for one cause cost.
type CauseCost struct {
	Cause string    `json:"cause"`
	Runs  int       `json:"runs"`
	USD   money.USD `json:"usd"`
}

// Reclaim is an idle job idle reclaim stopped or scaled down: the GPUs
// it freed, and the idle GPU-hours and money before it was reclaimed.
type Reclaim struct {
	Job       string    `json:"job"`
	Action    string    `json:"action"` // stopped, scaled
	GPUsFreed int64     `json:"gpusFreed"`
	GPUHours  float64   `json:"idleGpuHours"`
	USD       money.USD `json:"idleUsd"`
}

// IdleReport answers "why are our GPUs idle?" for a month: idle GPU-hours
// by job, owner and kind, what reclaim freed, and failed runs by cause.
type IdleReport struct {
	IdleGPUHours float64     `json:"idleGpuHours"`
	IdleUSD      money.USD   `json:"idleUsd"`
	ByJob        []IdleShare `json:"byJob"`
	ByOwner      []IdleShare `json:"byOwner"`
	ByKind       []IdleShare `json:"byKind"`
	// Reclaimed is nil when no reclaim record source is wired.
	Reclaimed         []Reclaim   `json:"reclaimed"`
	ReclaimedGPUHours float64     `json:"reclaimedIdleGpuHours"`
	ReclaimedGPUs     int64       `json:"reclaimedGpus"`
	FailedByCause     []CauseCost `json:"failedByCause"`
}

// CauseUnknown names failed runs whose cause was not recorded.
const CauseUnknown = "unknown"

// Idle builds the idle report of runs; top limits each list.
func Idle(runs []store.AccountedRun, reclaims []Reclaim, top int) IdleReport {
	var rep IdleReport
	byJob, byOwner, byKind := map[string]*IdleShare{}, map[string]*IdleShare{}, map[string]*IdleShare{}
	causes := map[string]*CauseCost{}
	add := func(m map[string]*IdleShare, name string, h float64, v money.USD) {
		s := m[name]
		if s == nil {
			s = &IdleShare{Name: name}
			m[name] = s
		}
		s.GPUHours += h
		s.USD += v
	}
	for _, r := range runs {
		if Wasted(r.Outcome) {
			c := r.Cause
			if c == "" {
				c = CauseUnknown
			}
			cc := causes[c]
			if cc == nil {
				cc = &CauseCost{Cause: c}
				causes[c] = cc
			}
			cc.Runs++
			cc.USD += r.CostUSD
		}
		measured, useful := Hours(r.LedgerRow)
		idle := measured - useful
		if idle <= 0 {
			continue
		}
		v := share(r.LedgerRow, idle)
		rep.IdleGPUHours += idle
		rep.IdleUSD += v
		owner, kind := r.Owner, r.Kind
		if owner == "" {
			owner = "(unknown)"
		}
		if kind == "" {
			kind = r.JobKind
		}
		add(byJob, r.JobName, idle, v)
		add(byOwner, owner, idle, v)
		add(byKind, kind, idle, v)
	}
	rep.ByJob, rep.ByOwner, rep.ByKind = topIdle(byJob, top), topIdle(byOwner, top), topIdle(byKind, top)
	rep.Reclaimed = reclaims
	for _, r := range reclaims {
		rep.ReclaimedGPUHours += r.GPUHours
		rep.ReclaimedGPUs += r.GPUsFreed
	}
	for _, k := range slices.Sorted(maps.Keys(causes)) {
		rep.FailedByCause = append(rep.FailedByCause, *causes[k])
	}
	slices.SortStableFunc(rep.FailedByCause, func(a, b CauseCost) int { return cmp.Compare(b.USD, a.USD) })
	return rep
}

// topIdle is the n most idle, ties by name.
func topIdle(m map[string]*IdleShare, n int) []IdleShare {
	return topOf(m, n, nil, func(_ string, a *IdleShare, _ string, b *IdleShare) bool {
		return a.GPUHours > b.GPUHours || (a.GPUHours == b.GPUHours && a.Name < b.Name)
	})
}

// WeekHours is a team's GPU-hours of one week: useful, idle and on runs
// that failed (failed runs' hours count there only; unmeasured hours of
// other runs are left out).
type WeekHours struct {
	Week   time.Time `json:"week"` // Monday 00:00 UTC
	Useful float64   `json:"usefulGpuHours"`
	Idle   float64   `json:"idleGpuHours"`
	Failed float64   `json:"failedGpuHours"`
}

// WeekStart is the Monday 00:00 UTC of t's week.
func WeekStart(t time.Time) time.Time {
	t = t.UTC()
	d := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	return d.AddDate(0, 0, -((int(d.Weekday()) + 6) % 7))
}

// Weekly sums runs per team into the weeks starting at first (a Monday),
// weeks of them, by the week each run ended in; teams sorted by name.
func Weekly(runs []store.RunHours, first time.Time, weeks int) map[string][]WeekHours {
	out := map[string][]WeekHours{}
	for _, r := range runs {
		i := int(r.EndedAt.Sub(first) / (7 * 24 * time.Hour))
		if r.EndedAt.Before(first) || i >= weeks {
			continue
		}
		ws := out[r.Team]
		if ws == nil {
			ws = make([]WeekHours, weeks)
			for j := range ws {
				ws[j].Week = first.AddDate(0, 0, 7*j)
			}
			out[r.Team] = ws
		}
		if Wasted(r.Outcome) {
			ws[i].Failed += r.AllocatedGPUHours
			continue
		}
		measured, useful := Hours(r.Row())
		ws[i].Useful += useful
		ws[i].Idle += measured - useful
	}
	return out
}
