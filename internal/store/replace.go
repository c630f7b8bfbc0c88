package store

import (
	"context"
	"errors"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// replaceRow writes row with an upsert on conflict and returns the row it
// replaced (zero when there was none), read under a row lock in the same
// transaction so two writers cannot both see the same "before". where and
// args select the row by its key.
func replaceRow[T any](ctx context.Context, db *gorm.DB, row *T, conflict clause.OnConflict, where string, args ...any) (T, error) {
	var before T
	err := db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		err := tx.Clauses(clause.Locking{Strength: "UPDATE"}).Where(where, args...).Take(&before).Error
		if err != nil && !errors.Is(err, gorm.ErrRecordNotFound) {
			return err
		}
		return tx.Clauses(conflict).Create(row).Error
	})
	return before, err
}
