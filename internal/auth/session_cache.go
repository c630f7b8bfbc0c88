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
// reads its session from PostgreSQL once per hold or renewal instead of
// on every view. A session is kept only while the database's notices
// are heard (store.Changes), and dropped as soon as its row is written or
// deleted by any replica (migration 00027): a sign-out, here or on
// another replica, ends the session on the next view after the notice
// (a moment after its commit), and at once on the replica that signed
// out. A session is also never answered past its deadline, nor longer
// than its hold: a quarter of the idle timeout (the longest a used
// session goes without being written, see renewInterval) or 30 s.
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
	data  []byte
	until time.Time
	// connection is the listening connection the session was read under.
	connection uint64
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

// get is the kept copy of the session, if one may be answered now.
func (k *keptSessions) get(token string) ([]byte, bool) {
	connection, live := k.changes.Listening()
	if !live {
		return nil, false
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	e, ok := k.byHash[tokenHash(token)]
	if !ok || e.connection != connection || !time.Now().Before(e.until) {
		return nil, false
	}
	return e.data, true
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

// keep keeps a session read since m, unless anything was dropped or the
// listening connection changed meanwhile.
func (k *keptSessions) keep(token string, data []byte, m readMark) {
	if !m.live {
		return
	}
	deadline, _, err := k.codec.Decode(data)
	if err != nil {
		return
	}
	now := time.Now()
	until := now.Add(k.hold)
	if deadline.Before(until) {
		until = deadline
	}
	if connection, live := k.changes.Listening(); !live || connection != m.connection {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.changed != m.changed {
		return
	}
	if len(k.byHash) >= maxKeptSessions {
		for h, e := range k.byHash {
			if !now.Before(e.until) || e.connection != m.connection {
				delete(k.byHash, h)
			}
		}
		if len(k.byHash) >= maxKeptSessions {
			return
		}
	}
	k.byHash[tokenHash(token)] = keptSession{data: data, until: until, connection: m.connection}
}
