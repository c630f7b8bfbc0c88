package views

// Form fields of accepted results and shared costs.
const (
	FieldVerdict         = "verdict"
	FieldVerdictNote     = "note"
	FieldAcceptSucceeded = "acceptSucceeded"
	FieldCostMonth       = "month"
	FieldCostPool        = "pool"
	FieldCostNetwork     = "networkUsd"
	FieldCostStorage     = "storageUsd"
	FieldCostSupport     = "supportUsd"
	FieldCostOperations  = "operationsUsd"
	FieldCostLabel       = "label"
	FieldCostRental      = "rentalUsdPerGpuHour"
	FieldCostAPI         = "apiUsdPerMillionTokens"
)

// VerdictProps is the result section of a job page: the verdict on the
// job's result and, for its owner, its team's leads and admins, the buttons.
type VerdictProps struct {
	// Verdict is "accepted", "rejected" or "" (none yet); ByRule marks a
	// succeeded run the team's rule accepts.
	Verdict, Note, DecidedBy, DecidedAt string
	ByRule                              bool
	// URL is where the buttons post; empty when the user may not decide.
	URL string
}

// TeamCostProps is the cost section of a team page: the month's cost per
// accepted unit with the guide's terms, the trend, the comparison, the
// team's acceptance rule and why GPUs were idle.
type TeamCostProps struct {
	Month, MonthLabel string
	Terms             []CostTerm
	Total             string
	AcceptedRuns      int
	AcceptedByRule    int
	RejectedRuns      int
	// PerAcceptedRun is "–" while no run was accepted.
	PerAcceptedRun string
	// Endpoint units: EndpointLine says what endpoints served and cost per
	// unit, or why no units are counted.
	EndpointLine string
	// Verdict compares with the admin's alternative; empty without one.
	Verdict string
	Trend   []TrendRow
	// Rule is the team's rule; RuleURL is set for those who may change it.
	RuleOn   bool
	RuleLine string
	RuleURL  string
	APIURL   string
	Idle     IdleProps
}

// CostTerm is one of the guide's terms: its name, amount and what it is.
type CostTerm struct {
	Name, Amount, Hint, TestID string
}

// TrendRow is one month of the trend.
type TrendRow struct {
	Month, Total, Accepted, PerAcceptedRun, PerEndpointUnit string
}

// IdleProps answers "why are our GPUs idle?".
type IdleProps struct {
	IdleHours, IdleCost string
	ByJob, ByOwner      []IdleRow
	ByKind              []IdleRow
	// Reclaimed says what idle reclaim freed, or that it is not known.
	Reclaimed     string
	ReclaimedRows []IdleRow
	FailedByCause []CauseRow
}

// IdleRow is one job's, owner's or kind's idle GPU time.
type IdleRow struct {
	Name, Hours, Cost string
}

// CauseRow is the cost of runs that ended for one cause.
type CauseRow struct {
	Cause, Cost string
	Runs        int
}

// StackedBarChart is a stacked bar chart laid out for an SVG view box.
type StackedBarChart struct {
	Width, Height int
	Bars          []StackedChartBar
	Summary       string
	TestID        string
}

// StackedChartBar is one bar of segments, bottom first.
type StackedChartBar struct {
	Label, Total string
	X, W, TotalY float64
	Segments     []ChartSegment
}

// ChartSegment is one part of a stacked bar; Class styles it.
type ChartSegment struct {
	Series, Value, Class string
	Y, H                 float64
}

// TeamWeeksChart is one team's weekly useful, idle and failed GPU-hours.
type TeamWeeksChart struct {
	Team  string
	Chart StackedBarChart
}

// SharedCostsProps is the admin's page of a month's shared costs per pool
// and the comparison with an alternative.
type SharedCostsProps struct {
	Month    string
	Pools    []string
	Costs    []SharedCostRow
	Problems []string
	// Form is what was sent when it was refused, else the month's defaults.
	Form       SharedCostForm
	Comparison ComparisonForm
}

// SharedCostRow is one pool's shared costs of the month.
type SharedCostRow struct {
	Pool, Network, Storage, Support, Operations, Total, SetBy string
}

// SharedCostForm is the shared-cost form's values.
type SharedCostForm struct {
	Pool, Network, Storage, Support, Operations string
}

// ComparisonForm is the comparison form's values and the one in effect.
type ComparisonForm struct {
	Label, Rental, API string
	// InEffect describes the comparison in effect this month, if any.
	InEffect string
}
