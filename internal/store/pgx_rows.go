package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"gorm.io/gorm"
)

// withPgx runs f with one of the pool's connections as pgx's own, for what
// gorm's database/sql path cannot do: several queries sent in one round
// trip (ReadJobTogether), many rows scanned without reflection
// (RunHoursBetween).
func (s *Store) withPgx(ctx context.Context, f func(*pgx.Conn) error) error {
	conn, err := s.SQL().Conn(ctx)
	if err != nil {
		return MarkUnavailable(err)
	}
	defer conn.Close()
	return conn.Raw(func(driverConn any) error {
		c, ok := driverConn.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("driver connection is a %T, not pgx's", driverConn)
		}
		return f(c.Conn())
	})
}

// dry builds statements without sending them, naming the model's columns
// so that every column has a field to land in.
func (s *Store) dry() *gorm.DB {
	return s.db.Session(&gorm.Session{DryRun: true, QueryFields: true, NewDB: true})
}
