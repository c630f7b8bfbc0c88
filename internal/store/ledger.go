package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/gantry-dev/gantry/internal/money"
)

// LedgerRow is one ended run of a workload and what it cost.
type LedgerRow struct {
	RunKey      string    `gorm:"primaryKey" json:"runKey"`
	WorkloadUID string    `json:"workloadUid"`
	Team        string    `json:"team"`
	Namespace   string    `json:"namespace"`
	JobName     string    `json:"jobName"`
	JobKind     string    `json:"jobKind"`
	Owner       string    `json:"owner"`
	Flavor      string    `json:"flavor"`
	Resource    string    `json:"resource"`
	GPUs        int64     `gorm:"column:gpus" json:"gpus"`
	CreatedAt   time.Time `json:"createdAt"`
	AdmittedAt  time.Time `json:"admittedAt"`
	EndedAt     time.Time `json:"endedAt"`
	Outcome     string    `json:"outcome"`
	Reason      string    `json:"reason"`
	// Cause is why a failed or evicted run ended, as its job page says it
	// (queue.CauseKind: out-of-memory, preempted, ...); empty otherwise or
	// when it could not be told.
	Cause             string  `json:"cause"`
	WaitSeconds       float64 `json:"waitSeconds"`
	AllocatedGPUHours float64 `gorm:"column:allocated_gpu_hours" json:"allocatedGpuHours"`
	// AvgUtilization is the mean GPU utilization (0-100) over the measured
	// part of the run; nil when Prometheus had no samples.
	AvgUtilization *float64 `json:"avgUtilization"`
	// MeasuredGPUHours is the part of AllocatedGPUHours with utilization
	// samples and UsefulGPUHours that part weighted by utilization; both nil
	// on rows recorded before they were kept.
	MeasuredGPUHours *float64 `gorm:"column:measured_gpu_hours" json:"measuredGpuHours"`
	UsefulGPUHours   *float64 `gorm:"column:useful_gpu_hours" json:"usefulGpuHours"`
	// USDPerHour is the price in effect when the run ended; CostUSD
	// integrates every price in effect over the run.
	USDPerHour money.USD `json:"usdPerHour"`
	CostUSD    money.USD `gorm:"column:cost_usd" json:"costUsd"`
	RecordedAt time.Time `json:"recordedAt"`
	// Seq is the ledger version the row's insert made (LedgerMark): the
	// database sets it; rows recorded before it was kept have 0.
	Seq int64 `gorm:"column:seq;->" json:"-"`
}

// TableName is cost_ledger.
func (LedgerRow) TableName() string { return "cost_ledger" }

// RecordRun inserts the row unless a row with its run key exists; it
// reports whether it inserted, so replicas racing on one run write it once.
func (s *Store) RecordRun(ctx context.Context, r LedgerRow) (bool, error) {
	defer s.jobs.forget(r.Namespace, r.JobName)
	if r.RecordedAt.IsZero() {
		r.RecordedAt = time.Now().UTC()
	}
	res := s.db.WithContext(ctx).Clauses(clause.OnConflict{DoNothing: true}).Create(&r)
	if res.Error != nil {
		return false, fmt.Errorf("record run %s of %s/%s: %w", r.RunKey, r.Namespace, r.JobName, res.Error)
	}
	return res.RowsAffected == 1, nil
}

// RecordedRunKeys returns which of keys are in the ledger.
func (s *Store) RecordedRunKeys(ctx context.Context, keys []string) (map[string]bool, error) {
	out := make(map[string]bool, len(keys))
	if len(keys) == 0 {
		return out, nil
	}
	var found []string
	if err := s.db.WithContext(ctx).Model(&LedgerRow{}).Where("run_key IN ?", keys).Pluck("run_key", &found).Error; err != nil {
		return nil, fmt.Errorf("look up recorded runs: %w", err)
	}
	for _, k := range found {
		out[k] = true
	}
	return out, nil
}

// LedgerRows returns the team's runs that ended in [from, to), oldest first.
// An empty team means every team.
func (s *Store) LedgerRows(ctx context.Context, team string, from, to time.Time) ([]LedgerRow, error) {
	var out []LedgerRow
	if err := ledgerRowsQuery(s.db.WithContext(ctx), team, from, to).Find(&out).Error; err != nil {
		return nil, fmt.Errorf("list ledger of %q: %w", team, err)
	}
	return out, nil
}

// Recorded narrows a ledger read to the rows recorded after ledger version
// After, up to version UpTo (LedgerRow.Seq, LedgerMark.Version): figures
// summed at one version add the rows recorded since (LedgerMark.Since),
// figures summed whole read up to the version they are summed at
// (LedgerMark.Rows). The zero value reads every row.
type Recorded struct {
	After, UpTo int64
	bounded     bool
}

func (r Recorded) where(tx *gorm.DB, column string) *gorm.DB {
	if !r.bounded {
		return tx
	}
	return tx.Where(column+" > ? AND "+column+" <= ?", r.After, r.UpTo)
}

// and is where's condition for a statement written with pgx's numbered
// placeholders, the first of them $first: " AND column > $first AND
// column <= $first+1" and its arguments, or nothing when r is unbounded.
func (r Recorded) and(column string, first int) (string, []any) {
	if !r.bounded {
		return "", nil
	}
	return fmt.Sprintf(" AND %s > $%d AND %s <= $%d", column, first, column, first+1), []any{r.After, r.UpTo}
}

// Lets reports whether r lets through a row recorded at version seq.
func (r Recorded) Lets(seq int64) bool {
	return !r.bounded || (seq > r.After && seq <= r.UpTo)
}

// Empty is true when r can let no row through.
func (r Recorded) Empty() bool { return r.bounded && r.After >= r.UpTo }

// EachLedgerRow calls fn with each of the rows LedgerRows returns that
// rec lets through, in the same order, one at a time as they are read:
// sums over thousands of runs need not hold them all. The statement is
// gorm's; the rows are read by pgx, which scans a row in a fifth of gorm's
// time. An error from fn stops the read and is returned.
func (s *Store) EachLedgerRow(ctx context.Context, team string, from, to time.Time, rec Recorded, fn func(LedgerRow) error) error {
	st := built[LedgerRow](rec.where(ledgerRowsQuery(s.dry(), team, from, to), "seq"))
	var stopped error
	err := s.withPgx(ctx, func(c *pgx.Conn) error {
		rows, err := c.Query(ctx, st.sql, st.vars...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			r, err := pgx.RowToStructByName[LedgerRow](rows)
			if err != nil {
				return err
			}
			r.shareNames()
			if stopped = fn(r); stopped != nil {
				return nil
			}
		}
		return rows.Err()
	})
	if err != nil {
		return fmt.Errorf("read ledger of %q: %w", team, err)
	}
	return stopped
}

// shareNames has r's team, namespace, kind, owner, flavor, resource,
// outcome, reason and cause point at the one copy of each that equal
// strings share (sharedName) instead of the copy scanned with the row:
// every run of a team repeats them, and figures kept over a month of the
// ledger keep each row's (or each job's) strings as long as they live,
// 10,000 rows' worth at 10,000 workloads. The run key, workload UID and
// job name are the run's own and stay as scanned.
func (r *LedgerRow) shareNames() {
	for _, f := range []*string{&r.Team, &r.Namespace, &r.JobKind, &r.Owner, &r.Flavor, &r.Resource, &r.Outcome, &r.Reason, &r.Cause} {
		*f = sharedName(*f)
	}
}

func ledgerRowsQuery(tx *gorm.DB, team string, from, to time.Time) *gorm.DB {
	q := tx.Where("ended_at >= ? AND ended_at < ?", from, to)
	if team != "" {
		q = q.Where("team = ?", team)
	}
	return q.Order("ended_at, run_key")
}

// JobRuns returns the ledger rows of one job, oldest first.
func (s *Store) JobRuns(ctx context.Context, namespace, job string) ([]LedgerRow, error) {
	if r, ok := s.together(ctx, namespace, job); ok {
		return r.runs, r.err
	}
	var out []LedgerRow
	if err := jobRunsQuery(s.db.WithContext(ctx), namespace, job).Find(&out).Error; err != nil {
		return nil, fmt.Errorf("list runs of %s/%s: %w", namespace, job, err)
	}
	return out, nil
}

func jobRunsQuery(tx *gorm.DB, namespace, job string) *gorm.DB {
	return tx.Where("namespace = ? AND job_name = ?", namespace, job).Order("ended_at")
}

// WaitPercentile is the p50 and p95 queue wait of a flavor's runs.
type WaitPercentile struct {
	Flavor   string
	Runs     int64
	P50, P95 float64 // seconds
}

// WaitPercentiles returns p50 and p95 of the wait before admission of the
// team's runs admitted since from, per flavor. An empty team means all.
func (s *Store) WaitPercentiles(ctx context.Context, team string, from time.Time) ([]WaitPercentile, error) {
	var out []WaitPercentile
	err := s.db.WithContext(ctx).Raw(`SELECT flavor, count(*) AS runs,
			percentile_cont(0.5) WITHIN GROUP (ORDER BY wait_seconds) AS p50,
			percentile_cont(0.95) WITHIN GROUP (ORDER BY wait_seconds) AS p95
		FROM cost_ledger WHERE admitted_at >= ? AND (? = '' OR team = ?)
		GROUP BY flavor ORDER BY flavor`, from, team, team).Scan(&out).Error
	if err != nil {
		return nil, fmt.Errorf("wait percentiles of %q: %w", team, err)
	}
	return out, nil
}
