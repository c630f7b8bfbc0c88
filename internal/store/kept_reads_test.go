package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gantry-dev/gantry/internal/devcluster/storetest"
	"github.com/gantry-dev/gantry/internal/roster"
	"github.com/gantry-dev/gantry/internal/servertiming"
	"github.com/gantry-dev/gantry/internal/store"
)

// launchReads are what one launch through the API reads before it
// creates anything: the caller's token and its owner, the teams, the team,
// the template and the image allowlist.
type launchReads struct {
	token     store.APIToken
	owner     store.User
	teams     []roster.Team
	team      roster.Team
	template  store.TemplateVersion
	allowlist []string
	// queries is how many round trips to PostgreSQL they took.
	queries int
}

func readForLaunch(t *testing.T, s *store.Store, hash []byte) launchReads {
	t.Helper()
	ctx, timing := servertiming.Start(context.Background())
	var r launchReads
	var err error
	r.token, err = s.APITokenByHash(ctx, hash)
	require.NoError(t, err)
	r.owner, err = s.UserByTokenHash(ctx, hash)
	require.NoError(t, err)
	r.teams, err = s.ActiveTeams(ctx)
	require.NoError(t, err)
	r.team, err = s.TeamByName(ctx, "vision")
	require.NoError(t, err)
	r.template, err = s.TemplateVersionOf(ctx, "pytorch-train", 0)
	require.NoError(t, err)
	r.allowlist, err = s.ImageRegistries(ctx)
	require.NoError(t, err)
	_, calls := servertiming.Parse(timing.Header())
	r.queries = calls["db"]
	return r
}

// A launch waits on PostgreSQL for its record alone: the token, owner,
// teams, template and allowlist it reads are kept by each replica until
// they change. The replica that changes one reads it afresh at once (an
// admin who retires a template, or a user who revokes a token, sees it
// take effect on their next request); the other replicas as soon as the
// database's notice reaches them; none while it cannot hear notices.
func TestLaunchReadsAreKeptUntilTheyChange(t *testing.T) {
	ctx := context.Background()
	r := keepingReplicas(t)
	one, other, oneChanges, otherChanges, stopOther := r.one, r.other, r.oneChanges, r.otherChanges, r.stopOther
	var err error

	require.NoError(t, one.UpsertTeams(ctx, []roster.Team{{Name: "vision", DisplayName: "Vision", MemberGroups: store.StringList{"vision-researchers"}}}))
	_, _, err = one.SaveTemplateVersion(ctx, store.TemplateVersion{Name: "pytorch-train", Kind: "training", Title: "PyTorch",
		Spec: json.RawMessage(`{"v":1}`), Digest: "v1", CreatedBy: "system"})
	require.NoError(t, err)
	_, err = one.SetImageAllowlist(ctx, []string{"ghcr.io/acme"}, "admin", time.Now())
	require.NoError(t, err)
	alice, err := one.RecordLogin(ctx, store.User{Issuer: "https://idp", Subject: "alice", Username: "alice", Groups: store.StringList{"vision-researchers"},
		LastLoginAt: time.Now()})
	require.NoError(t, err)
	hash := []byte("0123456789abcdef0123456789abcdef")
	tok, err := one.CreateAPIToken(ctx, store.APIToken{UserID: alice.ID, Username: "alice", Name: "ci", Hash: hash, Prefix: "gty_0123",
		CreatedAt: time.Now(), ExpiresAt: time.Now().Add(time.Hour)})
	require.NoError(t, err)

	heard(t, one, oneChanges, otherChanges)

	// Kept once read, on both replicas.
	for name, s := range map[string]*store.Store{"one": one, "other": other} {
		first := readForLaunch(t, s, hash)
		assert.Equal(t, 6, first.queries, "%s reads each once", name)
		again := readForLaunch(t, s, hash)
		assert.Zero(t, again.queries, "%s answers them again without the database", name)
		assert.Equal(t, first.token.ID, again.token.ID)
		assert.Equal(t, []string{"ghcr.io/acme"}, again.allowlist)
	}

	// A token's use is written about once a minute; it drops no copy.
	require.NoError(t, one.TouchAPIToken(ctx, tok.ID, time.Now()))
	time.Sleep(300 * time.Millisecond) // a notice would have come by now
	assert.Zero(t, readForLaunch(t, other, hash).queries, "a token's last use is not announced")

	// Revoked on one replica: refused there at once, and on the other as
	// soon as it hears.
	_, err = one.RevokeAPIToken(ctx, alice.ID, tok.ID, time.Now())
	require.NoError(t, err)
	assert.NotNil(t, readForLaunch(t, one, hash).token.RevokedAt, "the revoking replica reads the revocation at once")
	assert.Eventually(t, func() bool { return readForLaunch(t, other, hash).token.RevokedAt != nil }, 5*time.Second, 10*time.Millisecond,
		"the other replica refuses the token once it hears")

	// A team, a template and the allowlist changed on the other replica.
	vision, err := other.TeamByName(ctx, "vision")
	require.NoError(t, err)
	vision.MemberGroups = store.StringList{"vision-new"}
	_, err = other.SaveTeam(ctx, vision)
	require.NoError(t, err)
	_, _, err = other.SaveTemplateVersion(ctx, store.TemplateVersion{Name: "pytorch-train", Kind: "training", Title: "PyTorch",
		Spec: json.RawMessage(`{"v":2}`), Digest: "v2", CreatedBy: "admin"})
	require.NoError(t, err)
	_, err = other.SetImageAllowlist(ctx, []string{"ghcr.io/acme", "nvcr.io"}, "admin", time.Now())
	require.NoError(t, err)
	changed := func(r launchReads) bool {
		return len(r.teams) == 1 && r.teams[0].MemberGroups[0] == "vision-new" && r.team.MemberGroups[0] == "vision-new" &&
			r.template.Version == 2 && len(r.allowlist) == 2
	}
	assert.True(t, changed(readForLaunch(t, other, hash)), "the changing replica reads its changes at once")
	assert.Eventually(t, func() bool { return changed(readForLaunch(t, one, hash)) }, 5*time.Second, 10*time.Millisecond,
		"the other replica reads them once it hears")

	// A sign-in (the owner's groups, their last sign-in) reaches the owner
	// kept with a token.
	_, err = one.RecordLogin(ctx, store.User{Issuer: "https://idp", Subject: "alice", Username: "alice", Groups: store.StringList{"vision-new"},
		LastLoginAt: time.Now()})
	require.NoError(t, err)
	assert.Equal(t, store.StringList{"vision-new"}, readForLaunch(t, one, hash).owner.Groups)

	// A replica that cannot hear notices keeps nothing.
	stopOther()
	readForLaunch(t, other, hash)
	assert.Equal(t, 6, readForLaunch(t, other, hash).queries, "a replica cut off from notices reads each every time")
}

// The reads are kept while the replica writes other tables: a portal
// launching all the time is always writing its launch records.
func TestLaunchReadsAreKeptWhileOtherTablesAreWritten(t *testing.T) {
	ctx := context.Background()
	db, changes, _ := storetest.Listening(t)
	db.KeepReads(changes)
	require.NoError(t, db.UpsertTeams(ctx, []roster.Team{{Name: "vision", DisplayName: "Vision"}}))
	heard(t, db, changes)

	read := func() int {
		tctx, timing := servertiming.Start(ctx)
		_, err := db.TeamByName(tctx, "vision")
		require.NoError(t, err)
		_, calls := servertiming.Parse(timing.Header())
		return calls["db"]
	}
	assert.Equal(t, 1, read())
	done := changes.Writing() // a launch under way
	assert.Zero(t, read(), "kept while a launch is recorded")
	done()
	assert.Zero(t, read(), "and after")
}

// replicas are two stores of one database keeping their reads, each
// hearing the database's notices; stopOther cuts other off from them.
type replicas struct {
	one, other               *store.Store
	oneChanges, otherChanges *store.Changes
	stopOther                func()
}

func keepingReplicas(t *testing.T) replicas {
	t.Helper()
	var r replicas
	var dsn string
	r.one, dsn = storetest.Open(t)
	r.oneChanges, _ = storetest.Listen(t, dsn)
	r.one.KeepReads(r.oneChanges)
	other, err := store.Open(context.Background(), dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = other.Close() })
	r.other = other
	r.otherChanges, r.stopOther = storetest.Listen(t, dsn)
	r.other.KeepReads(r.otherChanges)
	return r
}

// heard waits until each of changes has heard the notices of every change
// committed so far (a notice is heard a moment after its commit, and would
// drop what a test has just read): notices come in the order of their
// commits, so once one sent now is heard, so are those before.
func heard(t *testing.T, db *store.Store, changes ...*store.Changes) {
	t.Helper()
	marks := make([]store.ChangeMark, len(changes))
	for i, c := range changes {
		marks[i], _ = c.Mark(store.TopicPrices)
	}
	_, err := db.SQL().ExecContext(context.Background(), `SELECT pg_notify('gantry_changes', 'prices')`)
	require.NoError(t, err)
	for i, c := range changes {
		require.Eventually(t, func() bool { return !c.Unchanged(store.TopicPrices, marks[i]) }, 10*time.Second, 5*time.Millisecond,
			"the notices so far are heard")
	}
}

// Every signed-in page view resolves its user from their account: each
// replica keeps it until the users table changes, so a view waits on no
// read of it. A sign-in (new groups) or a removed account reaches the
// replica that made it at once and the others once they hear.
func TestSignedInAccountIsKeptUntilItChanges(t *testing.T) {
	ctx := context.Background()
	r := keepingReplicas(t)
	one, other, oneChanges, otherChanges, stopOther := r.one, r.other, r.oneChanges, r.otherChanges, r.stopOther
	var err error

	alice, err := one.RecordLogin(ctx, store.User{Issuer: "https://idp", Subject: "alice", Username: "alice",
		Groups: store.StringList{"vision-researchers"}, LastLoginAt: time.Now()})
	require.NoError(t, err)
	heard(t, one, oneChanges, otherChanges)

	readID := func(s *store.Store, id int64) (store.User, int, error) {
		tctx, timing := servertiming.Start(ctx)
		u, err := s.UserByID(tctx, id)
		_, calls := servertiming.Parse(timing.Header())
		return u, calls["db"], err
	}
	read := func(s *store.Store) (store.User, int, error) { return readID(s, alice.ID) }
	for name, s := range map[string]*store.Store{"one": one, "other": other} {
		_, queries, err := read(s)
		require.NoError(t, err)
		assert.Equal(t, 1, queries, "%s reads the account once", name)
		u, queries, err := read(s)
		require.NoError(t, err)
		assert.Zero(t, queries, "%s answers it again without the database", name)
		assert.Equal(t, store.StringList{"vision-researchers"}, u.Groups)
	}

	// Signed in again on one replica with other groups.
	_, err = one.RecordLogin(ctx, store.User{Issuer: "https://idp", Subject: "alice", Username: "alice",
		Groups: store.StringList{"nlp-researchers"}, LastLoginAt: time.Now()})
	require.NoError(t, err)
	u, _, err := read(one)
	require.NoError(t, err)
	assert.Equal(t, store.StringList{"nlp-researchers"}, u.Groups, "the replica that signed her in reads her groups at once")
	assert.Eventually(t, func() bool {
		u, _, err := read(other)
		return err == nil && len(u.Groups) == 1 && u.Groups[0] == "nlp-researchers"
	}, 5*time.Second, 10*time.Millisecond, "the other replica reads them once it hears")

	// The account removed behind the portal's back.
	_, err = one.SQL().ExecContext(ctx, `DELETE FROM users WHERE id = $1`, alice.ID)
	require.NoError(t, err)
	for name, s := range map[string]*store.Store{"one": one, "other": other} {
		assert.Eventually(t, func() bool {
			_, _, err := read(s)
			return errors.Is(err, store.ErrNotFound)
		}, 5*time.Second, 10*time.Millisecond, "%s finds the account gone once it hears", name)
	}

	// A replica that cannot hear notices keeps nothing.
	bob, err := one.RecordLogin(ctx, store.User{Issuer: "https://idp", Subject: "bob", Username: "bob", LastLoginAt: time.Now()})
	require.NoError(t, err)
	stopOther()
	_, _, err = readID(other, bob.ID)
	require.NoError(t, err)
	_, queries, err := readID(other, bob.ID)
	require.NoError(t, err)
	assert.Equal(t, 1, queries, "a replica cut off from notices reads it every time")
}
