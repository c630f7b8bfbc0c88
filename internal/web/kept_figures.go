package web

import (
	"context"

	"github.com/gantry-dev/gantry/internal/store"
)

// keptCosts is a CostStore whose ledger version and prices, read by most
// team, cluster and job page views, are kept until they change.
type keptCosts struct {
	CostStore
	version *store.Kept[int64]
	prices  *store.Kept[[]store.GPUPrice]
}

func newKeptCosts(next CostStore, changes *store.Changes) *keptCosts {
	return &keptCosts{CostStore: next, version: store.NewKept[int64](changes, store.TopicLedger),
		prices: store.NewKept[[]store.GPUPrice](changes, store.TopicPrices)}
}

func (k *keptCosts) LedgerVersion(ctx context.Context) (int64, error) {
	return k.version.Get(ctx, "", k.CostStore.LedgerVersion)
}

// AllPrices is shared by every caller; they must not change what it returns.
func (k *keptCosts) AllPrices(ctx context.Context) ([]store.GPUPrice, error) {
	return k.prices.Get(ctx, "", k.CostStore.AllPrices)
}
