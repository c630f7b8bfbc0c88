package store

import (
	"context"
	"fmt"
)

// LedgerVersion is a number that changes whenever a ledger row is written,
// changed or removed (a trigger bumps it, whoever writes): figures derived
// from the ledger stay valid while it stays the same.
func (s *Store) LedgerVersion(ctx context.Context) (int64, error) {
	var v int64
	if err := s.db.WithContext(ctx).Raw("SELECT version FROM cost_ledger_version WHERE id = 1").Scan(&v).Error; err != nil {
		return 0, fmt.Errorf("read ledger version: %w", err)
	}
	return v, nil
}

// LedgerMark is how far the ledger has come. Version is LedgerVersion; a
// row's insert makes one version and the row carries it (LedgerRow.Seq),
// and an insert holds the version until it commits, so once a version is
// read every row up to it can be read: none recorded earlier appears
// later. Rewrites counts the changes that were not a new row (an update,
// a delete, by any writer): figures summed from rows must then be summed
// again, not added to.
type LedgerMark struct {
	Version  int64
	Rewrites int64
}

// Since says which rows were recorded after figures summed at m, up to
// now; when they cannot be added to (a rewrite came between, or m is
// ahead of now), ok is false and rec is every row up to now.
func (m LedgerMark) Since(now LedgerMark) (rec Recorded, ok bool) {
	if m.Rewrites != now.Rewrites || m.Version > now.Version {
		return now.Rows(), false
	}
	return Recorded{After: m.Version, UpTo: now.Version, bounded: true}, true
}

// Replaces reports whether figures summed at m may replace figures kept
// at old: they are not behind it, or a rewrite came between.
func (m LedgerMark) Replaces(old LedgerMark) bool {
	return old.Rewrites != m.Rewrites || old.Version <= m.Version
}

// Rows are every row recorded up to m (those recorded before rows carried
// their version too).
func (m LedgerMark) Rows() Recorded {
	return Recorded{After: -1, UpTo: m.Version, bounded: true}
}

// LedgerMark reads the ledger's mark.
func (s *Store) LedgerMark(ctx context.Context) (LedgerMark, error) {
	var m LedgerMark
	if err := s.db.WithContext(ctx).Raw("SELECT version, rewrites FROM cost_ledger_version WHERE id = 1").Scan(&m).Error; err != nil {
		return LedgerMark{}, fmt.Errorf("read ledger mark: %w", err)
	}
	return m, nil
}
