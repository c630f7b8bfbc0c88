package store

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"

	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"github.com/gantry-dev/gantry/migrations"
)

// Migrate applies all pending migrations from the embedded migrations
// folder. A PostgreSQL advisory lock serialises concurrent runners, so
// replicas starting at once apply each migration exactly once.
func Migrate(ctx context.Context, db *sql.DB, log *slog.Logger) error {
	locker, err := lock.NewPostgresSessionLocker()
	if err != nil {
		return fmt.Errorf("migrate: create lock: %w", err)
	}
	provider, err := goose.NewProvider(goose.DialectPostgres, db, migrations.FS(),
		goose.WithSessionLocker(locker),
		goose.WithSlog(log),
		// Numbers are handed out to changes made side by side: a database
		// may have 00016 before 00014 lands, and must still take 00014.
		goose.WithAllowOutofOrder(true),
	)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	results, err := provider.Up(ctx)
	if err != nil {
		return fmt.Errorf("migrate: apply: %w", err)
	}
	for _, r := range results {
		log.InfoContext(ctx, "migration applied", "source", r.Source.Path, "duration", r.Duration)
	}
	return nil
}
