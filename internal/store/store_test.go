package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gantry-dev/gantry/internal/devcluster/stacktest"
	"github.com/gantry-dev/gantry/internal/roster"
)

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// newStore opens a migrated store on a fresh database.
func newStore(t testing.TB) *Store {
	t.Helper()
	s, _ := newStoreAt(t)
	return s
}

// newStoreAt is newStore and the fresh database's DSN.
func newStoreAt(t testing.TB) (*Store, string) {
	t.Helper()
	ctx := context.Background()
	dsn := stacktest.Postgres(t)
	s, err := Open(ctx, dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	require.NoError(t, Migrate(ctx, s.SQL(), quietLog()))
	return s, dsn
}

func tables(t *testing.T, db *sql.DB) []string {
	t.Helper()
	rows, err := db.Query(`SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY table_name`)
	require.NoError(t, err)
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		require.NoError(t, rows.Scan(&n))
		out = append(out, n)
	}
	require.NoError(t, rows.Err())
	return out
}

func countVersions(t *testing.T, db *sql.DB) int {
	t.Helper()
	var n int
	require.NoError(t, db.QueryRow(`SELECT count(*) FROM goose_db_version WHERE version_id > 0`).Scan(&n))
	return n
}

func TestMigrateEmptyDatabaseAndIdempotent(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, stacktest.Postgres(t))
	require.NoError(t, err)
	defer s.Close()

	require.NoError(t, Migrate(ctx, s.SQL(), quietLog()))
	// Later migrations add tables; these must be there.
	want := []string{"api_tokens", "audit_log", "goose_db_version", "notifications", "quota_grants", "quota_requests", "sessions", "team_ceilings", "teams", "users"}
	first := tables(t, s.SQL())
	assert.Subset(t, first, want)
	applied := countVersions(t, s.SQL())
	assert.Positive(t, applied)

	require.NoError(t, Migrate(ctx, s.SQL(), quietLog()), "second run")
	assert.Equal(t, first, tables(t, s.SQL()))
	assert.Equal(t, applied, countVersions(t, s.SQL()), "second run applies nothing")
}

func TestMigrateConcurrentRunnersApplyOnce(t *testing.T) {
	ctx := context.Background()
	dsn := stacktest.Postgres(t)
	const runners = 4
	stores := make([]*Store, runners)
	for i := range stores {
		s, err := Open(ctx, dsn)
		require.NoError(t, err)
		defer s.Close()
		stores[i] = s
	}
	var wg sync.WaitGroup
	errs := make([]error, runners)
	for i, s := range stores {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = Migrate(ctx, s.SQL(), quietLog())
		}()
	}
	wg.Wait()
	for i, err := range errs {
		assert.NoError(t, err, "runner %d", i)
	}
	var files int
	require.NoError(t, stores[0].SQL().QueryRow(`SELECT count(DISTINCT version_id) FROM goose_db_version WHERE version_id > 0`).Scan(&files))
	assert.Equal(t, files, countVersions(t, stores[0].SQL()), "each migration recorded exactly once")
}

const testIssuer = "http://127.0.0.1:5556"

// login records a login of the person with subject sub at the test issuer.
func login(t *testing.T, s *Store, sub string, u User) User {
	t.Helper()
	u.Issuer, u.Subject = testIssuer, sub
	got, err := s.RecordLogin(context.Background(), u)
	require.NoError(t, err)
	return got
}

func TestUsers(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)

	_, err := s.UserByUsername(ctx, "alice")
	assert.ErrorIs(t, err, ErrNotFound)

	first := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	created := login(t, s, "sub-alice", User{Username: "alice", Name: "Alice", Email: "a@x", Groups: StringList{"vision-researchers"}, LastLoginAt: first})
	second := first.Add(time.Hour)
	again := login(t, s, "sub-alice", User{Username: "alice", Name: "Alice A.", Email: "a@y", Groups: StringList{"nlp-leads"}, LastLoginAt: second})
	assert.Equal(t, created.ID, again.ID, "the same subject is the same account")

	u, err := s.UserByID(ctx, created.ID)
	require.NoError(t, err)
	assert.Equal(t, "Alice A.", u.Name)
	assert.Equal(t, "a@y", u.Email)
	assert.Equal(t, StringList{"nlp-leads"}, u.Groups)
	assert.True(t, second.Equal(u.LastLoginAt))

	renamed := login(t, s, "sub-alice", User{Username: "alice.archer", LastLoginAt: second.Add(time.Hour)})
	assert.Equal(t, created.ID, renamed.ID, "a new preferred_username keeps the account")
	assert.Equal(t, "alice.archer", renamed.Username)

	_, err = s.RecordLogin(ctx, User{Username: "nobody", LastLoginAt: first})
	assert.Error(t, err, "a login without issuer and subject is refused")
}

func TestUsersWithTheSameUsernameAndDifferentSubjectsStayTwo(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	now := time.Now().UTC()
	first := login(t, s, "sub-1", User{Username: "sam", Name: "Sam One", Groups: StringList{"vision-researchers"}, LastLoginAt: now})
	second := login(t, s, "sub-2", User{Username: "sam", Name: "Sam Two", Groups: StringList{"nlp-researchers"}, LastLoginAt: now})
	assert.NotEqual(t, first.ID, second.ID, "two people, two accounts")

	same, err := s.UsersByUsername(ctx, "sam")
	require.NoError(t, err)
	require.Len(t, same, 2)
	assert.Equal(t, "Sam One", same[0].Name)
	assert.Equal(t, StringList{"vision-researchers"}, same[0].Groups, "the second login did not overwrite the first person's groups")
	assert.Equal(t, "Sam Two", same[1].Name)

	other := login(t, s, "sub-1", User{Username: "sam", Name: "Sam One", LastLoginAt: now})
	assert.Equal(t, first.ID, other.ID)
	otherIssuer, err := s.RecordLogin(ctx, User{Issuer: "https://other.example.com", Subject: "sub-1", Username: "sam", LastLoginAt: now})
	require.NoError(t, err)
	assert.NotEqual(t, first.ID, otherIssuer.ID, "the same sub at another issuer is another person")
}

func TestTeamsSeedAndUpsert(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	vision := roster.Team{Name: "vision", DisplayName: "Computer Vision", CostCenter: "CC-1001",
		MemberGroups: []string{"vision-researchers"}, LeadGroups: []string{"vision-leads"}}
	nlp := roster.Team{Name: "nlp", DisplayName: "nlp", MemberGroups: []string{"nlp-researchers"}}
	require.NoError(t, s.UpsertTeams(ctx, []roster.Team{vision, nlp}))
	require.NoError(t, s.UpsertTeams(ctx, []roster.Team{vision, nlp}), "upsert is repeatable")

	got, err := s.ActiveTeams(ctx)
	require.NoError(t, err)
	nlp.LeadGroups = []string{}
	assert.Equal(t, []roster.Team{nlp, vision}, got, "by name, no groups an empty list")

	_, err = s.TeamByName(ctx, "nope")
	assert.ErrorIs(t, err, ErrNotFound)
}

func TestAPITokens(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	now := time.Now().UTC().Truncate(time.Microsecond)
	alice := login(t, s, "sub-alice", User{Username: "alice", LastLoginAt: now})
	bob := login(t, s, "sub-bob", User{Username: "bob", LastLoginAt: now})

	tok, err := s.CreateAPIToken(ctx, APIToken{UserID: alice.ID, Username: "alice", Name: "ci", Hash: []byte("hash-1"), Prefix: "gty_abcd", ExpiresAt: now.Add(24 * time.Hour), ReadOnly: true})
	require.NoError(t, err)
	assert.NotZero(t, tok.ID)
	assert.True(t, tok.Active(now))
	assert.False(t, tok.Active(now.Add(25*time.Hour)), "expired")

	_, err = s.CreateAPIToken(ctx, APIToken{UserID: bob.ID, Username: "bob", Name: "dup", Hash: []byte("hash-1"), Prefix: "x", ExpiresAt: now})
	assert.Error(t, err, "hashes are unique")
	_, err = s.CreateAPIToken(ctx, APIToken{UserID: bob.ID, Username: "bob", Name: "long", Hash: []byte("hash-long"), Prefix: "x", CreatedAt: now, ExpiresAt: now.Add(91 * 24 * time.Hour)})
	assert.Error(t, err, "the database refuses a life beyond 90 days")

	got, err := s.APITokenByHash(ctx, []byte("hash-1"))
	require.NoError(t, err)
	assert.Equal(t, tok.ID, got.ID)
	assert.Equal(t, alice.ID, got.UserID)
	assert.Equal(t, "alice", got.Username)
	assert.True(t, got.ReadOnly)
	assert.Nil(t, got.LastUsedAt)

	_, err = s.APITokenByHash(ctx, []byte("other"))
	assert.ErrorIs(t, err, ErrNotFound)

	require.NoError(t, s.TouchAPIToken(ctx, tok.ID, now))
	got, err = s.APITokenByHash(ctx, []byte("hash-1"))
	require.NoError(t, err)
	require.NotNil(t, got.LastUsedAt)
	assert.True(t, now.Equal(*got.LastUsedAt))

	_, err = s.RevokeAPIToken(ctx, bob.ID, tok.ID, now)
	assert.ErrorIs(t, err, ErrNotFound, "only the owner revokes")

	revoked, err := s.RevokeAPIToken(ctx, alice.ID, tok.ID, now)
	require.NoError(t, err)
	require.NotNil(t, revoked.RevokedAt)
	assert.False(t, revoked.Active(now))

	_, err = s.RevokeAPIToken(ctx, alice.ID, tok.ID, now)
	assert.ErrorIs(t, err, ErrNotFound, "revoking twice")

	list, err := s.APITokens(ctx, alice.ID)
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, "ci", list[0].Name)

	bobs, err := s.CreateAPIToken(ctx, APIToken{UserID: bob.ID, Username: "bob", Name: "bobs", Hash: []byte("hash-2"), Prefix: "y", ExpiresAt: now.Add(time.Hour)})
	require.NoError(t, err)
	all, err := s.AllAPITokens(ctx, 10)
	require.NoError(t, err)
	assert.Len(t, all, 2, "admins see everyone's tokens")
	byAdmin, err := s.RevokeAnyAPIToken(ctx, bobs.ID, now)
	require.NoError(t, err)
	assert.False(t, byAdmin.Active(now))
	_, err = s.RevokeAnyAPIToken(ctx, bobs.ID, now)
	assert.ErrorIs(t, err, ErrNotFound)
}

func TestAuditAppendOnly(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	require.NoError(t, s.AppendAudit(ctx, AuditEntry{At: time.Now(), Actor: "alice", Action: "login", Via: "browser", IP: "127.0.0.1"}))
	require.NoError(t, s.AppendAudit(ctx, AuditEntry{At: time.Now(), Actor: "alice", Action: "token.create", Target: "token/1", Detail: json.RawMessage(`{"name":"ci"}`), Via: "browser"}))

	all, err := s.AuditEntries(ctx, AuditFilter{Actor: "alice"})
	require.NoError(t, err)
	require.Len(t, all, 2)
	assert.Equal(t, "token.create", all[0].Action)
	assert.JSONEq(t, `{"name":"ci"}`, string(all[0].Detail))
	assert.JSONEq(t, `{}`, string(all[1].Detail))

	_, err = s.SQL().Exec(`UPDATE audit_log SET actor = 'mallory'`)
	assert.ErrorContains(t, err, "append-only")
	_, err = s.SQL().Exec(`DELETE FROM audit_log`)
	assert.ErrorContains(t, err, "append-only")
}
