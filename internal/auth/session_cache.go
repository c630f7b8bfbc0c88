package auth

import (
	"crypto/sha256"
	"encoding/hex"
	"sync"
	"time"

	"github.com/alexedwards/scs/v2"

	"github.com/gantry-dev/gantry/internal/store"
)

// maxKeptSessions bounds the sessions a replica keeps; past it, those
// past their hold are dropped and new ones are read on every view until
// there is room again.
const maxKeptSessions = 4096

// maxSessionHold bounds how long a kept session is answered without
// reading it again, should a notice be lost without the listening
// connection noticing.
const maxSessionHold = 30 * time.Second

// keptSessions keeps the sessions this replica has read, so a page view
// does not wait on PostgreSQL for its session: a copy in the last quarter
// of its hold is answered while it is read again in the background. A
// session is kept only while the database's notices are heard
// (store.Changes), and dropped as soon as its data is written or its row
// deleted by any replica (migrations 00027 and 00032; pushing back its
// idle deadline changes neither): a sign-out, here or on another replica,
// ends the session on the next view after the notice (a moment after its
// commit), and at once on the replica that signed out. A copy is also
// never answered past the session's deadline or its row's idle deadline
// (as read, or pushed back here), nor longer than its hold since it was
// read: a quarter of the idle timeout, or 30 s.
type keptSessions struct {
	changes *store.Changes
	codec   scs.Codec
	hold    time.Duration

	mu sync.Mutex
	// changed counts the drops: a session read before one is not kept,
	// as it may be the copy the drop was for.
	changed uint64
	byHash  map[string]keptSession
}

type keptSession struct {
	data []byte
	// expiry is the row's idle deadline as last read or renewed here,
	// deadline the session's own (its lifetime), held the end of its hold.
	expiry, deadline, held time.Time
	// refreshing is set while the session is being read again.
	refreshing bool
	// connection is the listening connection the session was read under.
	connection uint64
}

// until is when the copy stops being answered.
func (e keptSession) until() time.Time {
	return minTime(e.held, e.deadline, e.expiry)
}

func minTime(t time.Time, more ...time.Time) time.Time {
	for _, u := range more {
		if u.Before(t) {
			t = u
		}
	}
	return t
}

func newKeptSessions(changes *store.Changes, codec scs.Codec, hold time.Duration) *keptSessions {
	k := &keptSessions{changes: changes, codec: codec, hold: hold, byHash: map[string]keptSession{}}
	changes.Follow(store.SessionNotices, k.heard)
	return k
}

// tokenHash is how the database's notices name a session.
func tokenHash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// heard drops the session a notice names ("*": all of them).
func (k *keptSessions) heard(hash string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.changed++
	if hash == "*" {
		clear(k.byHash)
		return
	}
	delete(k.byHash, hash)
}

// drop forgets a session this replica is about to write or delete.
func (k *keptSessions) drop(token string) { k.heard(tokenHash(token)) }

// get is the kept copy of the session, if one may be answered now, and
// whether the caller is to read it again (the copy is in the last quarter
// of its hold, and no read of it is under way).
func (k *keptSessions) get(token string) (keptSession, bool, bool) {
	connection, live := k.changes.Listening()
	if !live {
		return keptSession{}, false, false
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	h := tokenHash(token)
	e, ok := k.byHash[h]
	now := time.Now()
	if !ok || e.connection != connection || !now.Before(e.until()) {
		return keptSession{}, false, false
	}
	refresh := !e.refreshing && !now.Before(e.until().Add(-k.hold/4))
	if refresh {
		e.refreshing = true
		k.byHash[h] = e
	}
	return e, true, refresh
}

// refreshed ends the read of a session get asked for.
func (k *keptSessions) refreshed(token string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	h := tokenHash(token)
	if e, ok := k.byHash[h]; ok {
		e.refreshing = false
		k.byHash[h] = e
	}
}

// renewed notes that this replica pushed the session's row's idle
// deadline back to expiry.
func (k *keptSessions) renewed(token string, expiry time.Time) {
	k.mu.Lock()
	defer k.mu.Unlock()
	h := tokenHash(token)
	if e, ok := k.byHash[h]; ok && expiry.After(e.expiry) {
		e.expiry = expiry
		k.byHash[h] = e
	}
}

// readMark is taken before a session is read from the database.
type readMark struct {
	changed, connection uint64
	live                bool
}

func (k *keptSessions) mark() readMark {
	connection, live := k.changes.Listening()
	k.mu.Lock()
	defer k.mu.Unlock()
	return readMark{changed: k.changed, connection: connection, live: live}
}

// keep keeps a session (its row's data and idle deadline) read since m,
// unless anything was dropped or the listening connection changed
// meanwhile.
func (k *keptSessions) keep(token string, data []byte, expiry time.Time, m readMark) {
	if !m.live {
		return
	}
	deadline, _, err := k.codec.Decode(data)
	if err != nil {
		return
	}
	now := time.Now()
	e := keptSession{data: data, expiry: expiry, deadline: deadline, held: now.Add(k.hold), connection: m.connection}
	if connection, live := k.changes.Listening(); !live || connection != m.connection {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.changed != m.changed {
		return
	}
	if len(k.byHash) >= maxKeptSessions {
		for h, kept := range k.byHash {
			if !now.Before(kept.until()) || kept.connection != m.connection {
				delete(k.byHash, h)
			}
		}
		if len(k.byHash) >= maxKeptSessions {
			return
		}
	}
	k.byHash[tokenHash(token)] = e
}
