package auth

import (
	"slices"
	"sync"
	"time"
)

// SessionUserTTL is how long a signed-in user, once resolved from their
// account and the teams, serves that user's page views on this replica.
// The store keeps the account and the teams until the database announces
// a change of them (store.KeepReads), so resolving again costs no round
// trip, and a change made elsewhere (a team's groups edited, an account
// removed, another replica's sign-in) takes effect within this long of
// its notice reaching the replica; a sign-in or sign-out on this replica
// takes effect at once. API tokens are not kept here: a revoked one is
// refused as soon as the store hears of it.
const SessionUserTTL = 5 * time.Second

// maxCachedUsers bounds the cache; past it, expired entries are dropped,
// and if none are, everything is.
const maxCachedUsers = 10_000

// userCache keeps resolved session users for SessionUserTTL. Its zero
// value is ready to use.
type userCache struct {
	mu   sync.Mutex
	byID map[int64]cachedUser
}

type cachedUser struct {
	user    *User
	expires time.Time
}

// get returns a copy of the user cached for id, if still fresh at now.
func (c *userCache) get(id int64, now time.Time) (*User, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.byID[id]
	if !ok || !now.Before(e.expires) {
		return nil, false
	}
	return cloneUser(e.user), true
}

func (c *userCache) put(u *User, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byID == nil {
		c.byID = map[int64]cachedUser{}
	}
	if len(c.byID) >= maxCachedUsers {
		for id, e := range c.byID {
			if !now.Before(e.expires) {
				delete(c.byID, id)
			}
		}
		if len(c.byID) >= maxCachedUsers {
			clear(c.byID)
		}
	}
	c.byID[u.ID] = cachedUser{user: cloneUser(u), expires: now.Add(SessionUserTTL)}
}

func (c *userCache) forget(id int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.byID, id)
}

func (c *userCache) forgetAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.byID)
}

// cloneUser copies u so that no request changes another's user.
func cloneUser(u *User) *User {
	out := *u
	out.Groups = slices.Clone(u.Groups)
	out.ClusterGroups = slices.Clone(u.ClusterGroups)
	out.Teams = slices.Clone(u.Teams)
	return &out
}
