package store

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm/clause"

	"github.com/gantry-dev/gantry/internal/money"
)

// GPUPrice is what one GPU (or MIG slice) of a flavor costs per hour from
// EffectiveFrom until the next price of the same flavor and resource.
type GPUPrice struct {
	Flavor        string    `gorm:"primaryKey"`
	Resource      string    `gorm:"primaryKey"`
	EffectiveFrom time.Time `gorm:"primaryKey"`
	USDPerHour    money.USD
	SetBy         string
	CreatedAt     time.Time
}

// TableName is gpu_prices.
func (GPUPrice) TableName() string { return "gpu_prices" }

// AddPrice stores a price; a price with the same flavor, resource and
// effective date is left as it is, so seeding twice changes nothing.
func (s *Store) AddPrice(ctx context.Context, p GPUPrice) error {
	if err := s.db.WithContext(ctx).Clauses(clause.OnConflict{DoNothing: true}).Create(&p).Error; err != nil {
		return fmt.Errorf("add price of %s %s: %w", p.Flavor, p.Resource, err)
	}
	return nil
}

// PriceAt returns the price of the flavor's resource in effect at t, or
// ErrNotFound when none was set by then.
func (s *Store) PriceAt(ctx context.Context, flavor, resource string, t time.Time) (GPUPrice, error) {
	var p GPUPrice
	err := s.db.WithContext(ctx).Where("flavor = ? AND resource = ? AND effective_from <= ?", flavor, resource, t).
		Order("effective_from DESC").Take(&p).Error
	if err != nil {
		return GPUPrice{}, fmt.Errorf("price of %s %s at %s: %w", flavor, resource, t.Format(time.RFC3339), notFound(err))
	}
	return p, nil
}

// CurrentPrices returns the price in effect at t of every flavor and
// resource that has one, by flavor and resource.
func (s *Store) CurrentPrices(ctx context.Context, t time.Time) ([]GPUPrice, error) {
	var out []GPUPrice
	err := s.db.WithContext(ctx).Raw(`SELECT DISTINCT ON (flavor, resource) * FROM gpu_prices
		WHERE effective_from <= ? ORDER BY flavor, resource, effective_from DESC`, t).Scan(&out).Error
	if err != nil {
		return nil, fmt.Errorf("list current prices: %w", err)
	}
	return out, nil
}

// PricesOver returns the prices of the flavor's resource that apply to
// [from, to): the one in effect at from, if any, then every later one taking
// effect before to, oldest first.
func (s *Store) PricesOver(ctx context.Context, flavor, resource string, from, to time.Time) ([]GPUPrice, error) {
	var out []GPUPrice
	err := s.db.WithContext(ctx).Raw(`(SELECT * FROM gpu_prices WHERE flavor = ? AND resource = ? AND effective_from <= ?
			ORDER BY effective_from DESC LIMIT 1)
		UNION ALL
		(SELECT * FROM gpu_prices WHERE flavor = ? AND resource = ? AND effective_from > ? AND effective_from < ?)
		ORDER BY effective_from`, flavor, resource, from, flavor, resource, from, to).Scan(&out).Error
	if err != nil {
		return nil, fmt.Errorf("prices of %s %s from %s to %s: %w", flavor, resource, from.Format(time.RFC3339), to.Format(time.RFC3339), err)
	}
	return out, nil
}
