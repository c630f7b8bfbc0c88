package auth

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gantry-dev/gantry/internal/roster"
	"github.com/gantry-dev/gantry/internal/store"
)

// countingUsers counts the account and team reads.
type countingUsers struct {
	Store
	user  store.User
	teams []roster.Team
	users atomic.Int64
	lists atomic.Int64
}

func (s *countingUsers) UserByID(context.Context, int64) (store.User, error) {
	s.users.Add(1)
	return s.user, nil
}

func (s *countingUsers) ActiveTeams(context.Context) ([]roster.Team, error) {
	s.lists.Add(1)
	return s.teams, nil
}

func TestSessionUserReadOncePerTTL(t *testing.T) {
	s := &countingUsers{user: store.User{ID: 7, Username: "alice", Groups: []string{"vision"}},
		teams: []roster.Team{{Name: "vision", MemberGroups: []string{"vision"}}}}
	a := &Authenticator{Store: s, Resolver: Resolver{Teams: s}}
	ctx := context.Background()
	for range 100 {
		u, err := a.load(ctx, 7)
		require.NoError(t, err)
		require.Equal(t, "alice", u.Username)
		require.Len(t, u.Teams, 1)
		u.Teams[0].Team = "changed by a handler" // must not leak into the next view
	}
	assert.Equal(t, int64(1), s.users.Load(), "account reads for 100 views")
	assert.Equal(t, int64(1), s.lists.Load(), "team reads for 100 views")

	// A team edit on this replica shows on the next view.
	s.teams = []roster.Team{{Name: "vision", MemberGroups: []string{"vision"}}, {Name: "nlp", MemberGroups: []string{"vision"}}}
	a.ForgetUsers()
	u, err := a.load(ctx, 7)
	require.NoError(t, err)
	assert.Len(t, u.Teams, 2)
	assert.Equal(t, "vision", u.Teams[0].Team)

	// Elsewhere, within SessionUserTTL.
	a.users.mu.Lock()
	e := a.users.byID[7]
	e.expires = time.Now().Add(-time.Millisecond)
	a.users.byID[7] = e
	a.users.mu.Unlock()
	_, err = a.load(ctx, 7)
	require.NoError(t, err)
	assert.Equal(t, int64(3), s.users.Load(), "read again after SessionUserTTL")
}
