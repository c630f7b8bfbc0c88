package auth

import (
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/alexedwards/scs/v2"
)

// maxDecodedSessions bounds the sessions whose decoded values are kept
// (a few hundred bytes to a few KiB each, the ID token the largest);
// past it they are all dropped and decoded again as views come.
const maxDecodedSessions = 1024

// decodedSessionIdle is how long decoded values are kept without a view
// asking for them: a session's bytes change each time it is written (a
// flash message put and popped), and the values of its old bytes are
// never asked for again.
const decodedSessionIdle = time.Minute

// decodedSessions is a session codec that keeps the values of the sessions
// it decoded by their encoded bytes. Each view decodes its session, and
// scs's gob codec makes a new gob decoder for each, which compiles its
// decoding of the session's types anew: a tenth of the CPU of a job list
// view in the 39th load run, and 238 MB of the run's allocations, for
// bytes that change only when the session is written. Sessions come from
// the portal's own store, never from the browser (the cookie holds the
// token only).
type decodedSessions struct {
	scs.Codec
	mu     sync.Mutex
	byData map[string]*decodedSession
	// swept is when values idle past decodedSessionIdle were last dropped.
	swept time.Time
	now   func() time.Time
}

type decodedSession struct {
	deadline time.Time
	values   map[string]any
	used     time.Time
}

func newDecodedSessions(c scs.Codec) *decodedSessions {
	return &decodedSessions{Codec: c, byData: map[string]*decodedSession{}, now: time.Now}
}

// Decode answers the values of data from memory when it decoded the same
// bytes before. Each caller gets values of its own: scs changes the map
// when the view puts or pops a value.
func (d *decodedSessions) Decode(data []byte) (time.Time, map[string]any, error) {
	now := d.now()
	d.mu.Lock()
	s, ok := d.byData[string(data)]
	if ok {
		s.used = now
	}
	d.mu.Unlock()
	if ok {
		return s.deadline, ownValues(s.values), nil
	}
	deadline, values, err := d.Codec.Decode(data)
	if err != nil {
		return deadline, values, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if now.Sub(d.swept) >= decodedSessionIdle/4 {
		d.swept = now
		maps.DeleteFunc(d.byData, func(_ string, s *decodedSession) bool { return now.Sub(s.used) >= decodedSessionIdle })
	}
	if len(d.byData) >= maxDecodedSessions {
		clear(d.byData)
	}
	d.byData[string(data)] = &decodedSession{deadline: deadline, values: ownValues(values), used: now}
	return deadline, values, nil
}

// ownValues copies a session's values so that no caller shares what it
// may change: the map, and the string slices (flash messages) that a view
// appends to. The other values the portal puts are numbers and strings.
func ownValues(values map[string]any) map[string]any {
	out := maps.Clone(values)
	for k, v := range out {
		if s, ok := v.([]string); ok {
			out[k] = slices.Clip(slices.Clone(s))
		}
	}
	return out
}
