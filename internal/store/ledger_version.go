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
