package store

import (
	"context"
	"fmt"

	"gorm.io/gorm/clause"
)

// AllPrices returns every stored price, past and future, by flavor,
// resource and newest effective date first.
func (s *Store) AllPrices(ctx context.Context) ([]GPUPrice, error) {
	var out []GPUPrice
	if err := s.db.WithContext(ctx).Order("flavor, resource, effective_from DESC").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("list prices: %w", err)
	}
	return out, nil
}

// SetPrice stores an admin's price; a price with the same flavor, resource
// and effective date is replaced, others are kept so past costs stay.
func (s *Store) SetPrice(ctx context.Context, p GPUPrice) error {
	err := s.db.WithContext(ctx).Clauses(clause.OnConflict{
		Columns:   []clause.Column{{Name: "flavor"}, {Name: "resource"}, {Name: "effective_from"}},
		DoUpdates: clause.AssignmentColumns([]string{"usd_per_hour", "set_by"}),
	}).Create(&p).Error
	if err != nil {
		return fmt.Errorf("set price of %s %s: %w", p.Flavor, p.Resource, err)
	}
	return nil
}
