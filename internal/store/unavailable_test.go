package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gantry-dev/gantry/internal/problem"
)

func TestMarkUnavailableMarksOnlyADatabaseThatDidNotAnswer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Nothing listens on port 1 of loopback: the connection is refused.
	_, refused := pgx.Connect(ctx, "postgres://gantry@127.0.0.1:1/gantry?sslmode=disable&connect_timeout=5")
	require.Error(t, refused)
	cases := map[string]struct {
		err  error
		want bool
	}{
		"connection refused":       {err: fmt.Errorf("list teams: %w", refused), want: true},
		"server shutting down":     {err: &pgconn.PgError{Code: "57P01", Message: "terminating connection due to administrator command"}, want: true},
		"server starting up":       {err: &pgconn.PgError{Code: "57P03", Message: "the database system is starting up"}, want: true},
		"connection cut":           {err: fmt.Errorf("commit: %w", io.ErrUnexpectedEOF), want: true},
		"unique violation":         {err: &pgconn.PgError{Code: "23505", Message: "duplicate key"}},
		"record not found":         {err: ErrNotFound},
		"a mistake of the caller":  {err: errors.New("bad input")},
		"a context ended by a cap": {err: context.Canceled},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := MarkUnavailable(tc.err)
			assert.Equal(t, tc.want, errors.Is(got, ErrUnavailable))
			assert.ErrorIs(t, got, tc.err, "the cause stays in the chain")
			if tc.want {
				p := problem.Describe(got)
				assert.Equal(t, problem.Unavailable, p.Kind)
				assert.Equal(t, "database_unavailable", p.Code)
				assert.Equal(t, "The portal's database is not answering, so this was not done. Nothing you did before was lost: try again in a moment.", p.Detail)
			}
		})
	}
	assert.NoError(t, MarkUnavailable(nil))
}
