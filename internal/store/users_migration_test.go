package store

import (
	"context"
	"testing"
	"time"

	"github.com/pressly/goose/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gantry-dev/gantry/internal/devcluster/stacktest"
	"github.com/gantry-dev/gantry/migrations"
)

// TestAccountsKeyedOnSubjectMigrateExistingRows builds a database as it was
// when users were keyed on username, then migrates it: rows learn their
// subject from their last login in the audit log, tokens stay with their
// owner and keep working, and the next login claims the row.
func TestAccountsKeyedOnSubjectMigrateExistingRows(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, stacktest.Postgres(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	provider, err := goose.NewProvider(goose.DialectPostgres, s.SQL(), migrations.FS())
	require.NoError(t, err)
	_, err = provider.UpTo(ctx, 5)
	require.NoError(t, err)

	db := s.SQL()
	_, err = db.ExecContext(ctx, `INSERT INTO users (username, name, groups, last_login_at) VALUES
		('alice', 'Alice', '["vision-researchers"]', now()),
		('olduser', 'Old', '[]', now())`)
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, `INSERT INTO audit_log (actor, action, detail) VALUES
		('alice', 'login', '{"subject": "sub-alice-old"}'),
		('alice', 'login', '{"subject": "sub-alice"}')`)
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, `INSERT INTO api_tokens (username, name, hash, prefix, created_at, expires_at)
		VALUES ('alice', 'ci', 'h1', 'gty_x', now(), now() + interval '365 days')`)
	require.NoError(t, err)

	require.NoError(t, Migrate(ctx, db, quietLog()))

	alice, err := s.UserByUsername(ctx, "alice")
	require.NoError(t, err)
	assert.Equal(t, "sub-alice", alice.Subject, "the subject of the latest login")
	tok, err := s.APITokenByHash(ctx, []byte("h1"))
	require.NoError(t, err)
	assert.Equal(t, alice.ID, tok.UserID, "the token stays with its owner")
	assert.WithinDuration(t, tok.CreatedAt.Add(90*24*time.Hour), tok.ExpiresAt, time.Second, "a year-long token is cut to 90 days")

	now := time.Now().UTC()
	claimed, err := s.RecordLogin(ctx, User{Issuer: testIssuer, Subject: "sub-alice", Username: "alice", LastLoginAt: now})
	require.NoError(t, err)
	assert.Equal(t, alice.ID, claimed.ID, "the next login claims the row by its subject")
	assert.Equal(t, testIssuer, claimed.Issuer)

	other, err := s.RecordLogin(ctx, User{Issuer: testIssuer, Subject: "sub-someone-else", Username: "alice", LastLoginAt: now})
	require.NoError(t, err)
	assert.NotEqual(t, alice.ID, other.ID, "another person named alice does not take over alice's row")

	old, err := s.RecordLogin(ctx, User{Issuer: testIssuer, Subject: "sub-old", Username: "olduser", LastLoginAt: now})
	require.NoError(t, err)
	olds, err := s.UsersByUsername(ctx, "olduser")
	require.NoError(t, err)
	require.Len(t, olds, 1, "a row whose subject was never learnt is claimed by its username once")
	assert.Equal(t, olds[0].ID, old.ID)
}
