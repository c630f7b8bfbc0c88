package cost

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/gantry-dev/gantry/internal/gpu"
	"github.com/gantry-dev/gantry/internal/money"
	"github.com/gantry-dev/gantry/internal/naming"
	"github.com/gantry-dev/gantry/internal/store"
)

// LedgerStore is the database side of the ledger.
type LedgerStore interface {
	PricesOver(ctx context.Context, flavor, resource string, from, to time.Time) ([]store.GPUPrice, error)
	RecordRun(ctx context.Context, r store.LedgerRow) (bool, error)
	RecordedRunKeys(ctx context.Context, keys []string) (map[string]bool, error)
}

// WorkloadSource is the informer cache of Workloads.
type WorkloadSource interface {
	AllWorkloads() ([]*kueue.Workload, error)
}

// UtilizationSource measures how much of a time range a job's GPUs have
// utilization samples for, and how busy they were then.
type UtilizationSource interface {
	MeasuredUse(ctx context.Context, j gpu.Job, from, to time.Time) (gpu.Measured, error)
}

// CauseSource tells why a failed or evicted run ended, as the job page
// says it (queue.CauseKind); empty when it cannot be told.
type CauseSource interface {
	RunCause(ctx context.Context, r Run) string
}

// Ledger writes a ledger row for every run that ends. Each row's key is the
// workload UID and admission time and rows are inserted with ON CONFLICT DO
// NOTHING, so several replicas running the loop record each run once.
type Ledger struct {
	Store     LedgerStore
	Workloads WorkloadSource
	// Utilization may be nil; rows then have no utilization.
	Utilization UtilizationSource
	// Causes may be nil; failed and evicted rows then have no cause.
	Causes CauseSource
	Log    *slog.Logger

	mu   sync.Mutex
	done map[string]bool // run keys known to be recorded
}

// Observe records runs that end between scans: evictions, deletions of
// running workloads, and finished workloads deleted right away. Hook it to
// the Workload informer.
func (l *Ledger) Observe(ctx context.Context, old, new *kueue.Workload) {
	var (
		r  Run
		ok bool
	)
	if new == nil {
		r, ok = Deleted(old, time.Now())
	} else {
		r, ok = Evicted(old, new)
	}
	if !ok {
		return
	}
	if err := l.record(ctx, r); err != nil {
		l.Log.WarnContext(ctx, "cost ledger: record run", "workload", r.Namespace+"/"+r.Workload, "err", err)
	}
}

// Scan records every finished workload in the cache that is not yet in the
// ledger and returns how many rows it wrote.
func (l *Ledger) Scan(ctx context.Context) (int, error) {
	wls, err := l.Workloads.AllWorkloads()
	if err != nil {
		return 0, fmt.Errorf("cost ledger scan: %w", err)
	}
	var runs []Run
	var keys []string
	for _, wl := range wls {
		r, ok := Finished(wl)
		if !ok || l.known(r.Key()) {
			continue
		}
		runs = append(runs, r)
		keys = append(keys, r.Key())
	}
	if len(runs) == 0 {
		return 0, nil
	}
	have, err := l.Store.RecordedRunKeys(ctx, keys)
	if err != nil {
		return 0, fmt.Errorf("cost ledger scan: %w", err)
	}
	n := 0
	var errs []error
	for _, r := range runs {
		if have[r.Key()] {
			l.markDone(r.Key())
			continue
		}
		if err := l.record(ctx, r); err != nil {
			errs = append(errs, err)
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}

// Run scans every interval until ctx ends.
//
// A leader killed at any point, and the next leader scanning again, write
// each run once: the loop writes nothing to Kubernetes, and each row is
// one INSERT keyed by run_key (workload UID and admission time, the
// table's primary key) with ON CONFLICT DO NOTHING, so a row either
// committed before the kill or is written by the next leader; overlapping
// leaders and every replica's informer hook collide on the key. The
// in-memory set of recorded keys only saves queries; it is never trusted
// across leaders.
func (l *Ledger) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if n, err := l.Scan(ctx); err != nil {
			l.Log.WarnContext(ctx, "cost ledger scan failed", "err", err)
		} else if n > 0 {
			l.Log.InfoContext(ctx, "cost ledger: runs recorded", "runs", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (l *Ledger) known(key string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.done[key]
}

func (l *Ledger) markDone(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done == nil {
		l.done = map[string]bool{}
	}
	l.done[key] = true
}

func (l *Ledger) record(ctx context.Context, r Run) error {
	row, err := l.Row(ctx, r)
	if err != nil {
		return err
	}
	if _, err := l.Store.RecordRun(ctx, row); err != nil {
		return err
	}
	l.markDone(r.Key())
	return nil
}

// Row prices a run by integrating the price in effect over each part of
// it and measures its utilization. A flavor without a price costs nothing,
// which the team page shows as unpriced.
func (l *Ledger) Row(ctx context.Context, r Run) (store.LedgerRow, error) {
	row := store.LedgerRow{
		RunKey: r.Key(), WorkloadUID: r.WorkloadUID, Team: teamOf(r.Namespace), Namespace: r.Namespace,
		JobName: r.JobName, JobKind: r.JobKind, Flavor: r.Flavor, Resource: r.Resource, GPUs: r.GPUs,
		CreatedAt: r.Created, AdmittedAt: r.Admitted, EndedAt: r.Ended, Outcome: r.Outcome, Reason: r.Reason,
		WaitSeconds: r.Wait().Seconds(), AllocatedGPUHours: r.GPUHours(),
	}
	if l.Causes != nil && Wasted(r.Outcome) {
		row.Cause = l.Causes.RunCause(ctx, r)
	}
	if r.GPUs > 0 {
		ps, err := l.Store.PricesOver(ctx, r.Flavor, r.Resource, r.Admitted, r.Ended)
		if err != nil {
			return store.LedgerRow{}, fmt.Errorf("price run of %s/%s: %w", r.Namespace, r.JobName, err)
		}
		row.CostUSD, row.USDPerHour = Price(r, ps)
		if l.Utilization != nil {
			m, err := l.Utilization.MeasuredUse(ctx, gpu.Job{Namespace: r.Namespace, Name: r.JobName, Kind: r.JobKind}, r.Admitted, r.Ended)
			if err != nil {
				// The run is still recorded, unmeasured: cost does not depend on utilization.
				l.Log.WarnContext(ctx, "cost ledger: no utilization", "job", r.Namespace+"/"+r.JobName, "err", err)
			} else {
				SetMeasured(&row, m)
			}
		}
	}
	return row, nil
}

// SetMeasured stores a run's measured and useful GPU-hours on its row.
func SetMeasured(row *store.LedgerRow, m gpu.Measured) {
	units := float64(row.GPUs)
	measured, useful := units*m.Measured.Hours(), units*m.Useful.Hours()
	row.MeasuredGPUHours, row.UsefulGPUHours = &measured, &useful
	if m.Measured > 0 {
		u := 100 * m.Useful.Seconds() / m.Measured.Seconds()
		row.AvgUtilization = &u
	}
}

// Price integrates prices (oldest first, as PricesOver returns them) over
// the run: each part of it costs the price in effect then, and the time
// before the first price is free. last is the price in effect at its end.
func Price(r Run, prices []store.GPUPrice) (total, last money.USD) {
	for i, p := range prices {
		from := later(p.EffectiveFrom, r.Admitted)
		to := r.Ended
		if i+1 < len(prices) && prices[i+1].EffectiveFrom.Before(to) {
			to = prices[i+1].EffectiveFrom
		}
		if !p.EffectiveFrom.After(r.Ended) {
			last = p.USDPerHour
		}
		if to.After(from) {
			total += p.USDPerHour.For(r.GPUs, to.Sub(from))
		}
	}
	return total, last
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// teamOf is the team owning a team namespace, "" for any other.
func teamOf(namespace string) string {
	team, _ := naming.TeamOfNamespace(namespace)
	return team
}
