package views

import "github.com/a-h/templ"

// TeamStatusProps is a team's page: quota, queue, waits, GPU-hours and spend.
type TeamStatusProps struct {
	Team, DisplayName string
	// Error explains why cluster figures are missing (cache not synced).
	Error             string
	Quota             []QuotaUseRow
	Pending, Admitted int
	Waits             []WaitRow
	Hours             BarChart
	SpendChart        BarChart
	Spend             SpendView
	Running           SpendView
	TopByCost         []JobCostRow
	TopByIdle         []JobCostRow
	// Unpriced counts runs on flavors without a price.
	Unpriced   int
	LedgerCSV  string
	StatusURL  string
	MonthLabel string
	// AsOf is when the wait and cost figures were computed (HH:MM:SS UTC);
	// they are shared between requests for a few seconds.
	AsOf string
	// Cost is the cost per accepted result and why GPUs were idle; nil without accounting.
	Cost *TeamCostProps
	// Recovery is the time the team's jobs took to run again after a failure.
	Recovery TeamRecoveryView
	// Webhook is the team's chat webhook.
	Webhook TeamWebhookView
	// AcceptancePools are the pools whose acceptance runs the viewer may
	// start for this team (its leads and admins).
	AcceptancePools []string
}

// QuotaUseRow is one flavor's quota of a queue.
type QuotaUseRow struct {
	Queue, Flavor, Resource       string
	Nominal, Used, Borrowed, Lent string
}

// WaitRow is the queue wait of a flavor over the last day and week.
type WaitRow struct {
	Flavor                           string
	DayRuns, WeekRuns                int
	DayP50, DayP95, WeekP50, WeekP95 string
}

// SpendView is spend in words and numbers.
type SpendView struct {
	Runs, SucceededRuns, FailedRuns            int
	AllocatedHours, UsefulHours, IdleHours     string
	Cost, FailedCost, IdleCost, CostPerSuccess string
	// UnmeasuredHours had no GPU samples: neither useful nor idle.
	UnmeasuredHours, UnmeasuredCost string
}

// JobCostRow is one job in a top list.
type JobCostRow struct {
	Team, Job, Flavor, GPUHours, Cost, Idle string
	Runs                                    int
}

// ClusterProps is the admin's cluster page.
type ClusterProps struct {
	Error      string
	Pools      []PoolRow
	Queues     []QuotaUseRow
	Counts     []QueueCountRow
	Teams      []TeamSpendRow
	MonthLabel string
	// Weekly is each team's useful, idle and failed GPU-hours per week
	// (ClusterWeeklyCharts, kept rendered); nil shows the section saying
	// no run ended in these weeks.
	Weekly templ.Component
}

// PoolRow is a node pool's capacity, allocation and utilization.
type PoolRow struct {
	Pool, Resource, Capacity, Allocated, Utilization string
	Nodes                                            int
}

// QueueCountRow is a queue's workload counts.
type QueueCountRow struct {
	Queue, Team, Cohort string
	Pending, Admitted   int
}

// TeamSpendRow is one team's month-to-date figures.
type TeamSpendRow struct {
	Team string
	SpendView
}
