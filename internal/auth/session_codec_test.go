package auth

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/alexedwards/scs/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// countingCodec is scs's gob codec counting its decodes.
type countingCodec struct {
	scs.GobCodec
	decodes atomic.Int64
}

func (c *countingCodec) Decode(b []byte) (time.Time, map[string]any, error) {
	c.decodes.Add(1)
	return c.GobCodec.Decode(b)
}

// A session's bytes are decoded once while they stay the same; each view
// gets values it may change without changing another view's, and new
// bytes (a session written) are decoded again.
func TestSessionValuesAreDecodedOnceForTheSameBytes(t *testing.T) {
	gob := &countingCodec{}
	codec := newDecodedSessions(gob)
	deadline := time.Now().Add(time.Hour).UTC().Round(0)
	data, err := codec.Encode(deadline, map[string]any{keyUserID: int64(7), keyIDToken: "eyJ...", "flash": []string{"ok\x1fSaved."}})
	require.NoError(t, err)

	d1, v1, err := codec.Decode(data)
	require.NoError(t, err)
	d2, v2, err := codec.Decode(data)
	require.NoError(t, err)
	assert.Equal(t, int64(1), gob.decodes.Load(), "the same bytes are decoded once")
	assert.True(t, d1.Equal(deadline) && d2.Equal(deadline), "the session's deadline")
	assert.Equal(t, v1, v2)
	assert.Equal(t, int64(7), v2[keyUserID])

	// A view puts a value and appends a flash message to its own copy.
	v1[keyUserID] = int64(8)
	flashes := v1["flash"].([]string)
	v1["flash"] = append(flashes, "ok\x1fAgain.")
	flashes[0] = "changed in place"
	_, v3, err := codec.Decode(data)
	require.NoError(t, err)
	assert.Equal(t, int64(7), v3[keyUserID], "another view's change does not show")
	assert.Equal(t, []string{"ok\x1fSaved."}, v3["flash"], "nor its flash messages")

	changed, err := codec.Encode(deadline, map[string]any{keyUserID: int64(9)})
	require.NoError(t, err)
	_, v4, err := codec.Decode(changed)
	require.NoError(t, err)
	assert.Equal(t, int64(9), v4[keyUserID], "a session written is decoded anew")
	assert.Equal(t, int64(2), gob.decodes.Load())

	_, _, err = codec.Decode([]byte("not a session"))
	assert.Error(t, err, "bytes that do not decode are an error, every time")
	_, _, err = codec.Decode([]byte("not a session"))
	assert.Error(t, err)
}

// The kept values are bounded: past maxDecodedSessions they are dropped.
func TestDecodedSessionsAreBounded(t *testing.T) {
	codec := newDecodedSessions(scs.GobCodec{})
	for i := range maxDecodedSessions + 10 {
		data, err := codec.Encode(time.Now().Add(time.Hour), map[string]any{keyUserID: int64(i)})
		require.NoError(t, err)
		_, v, err := codec.Decode(data)
		require.NoError(t, err)
		require.Equal(t, int64(i), v[keyUserID])
	}
	assert.LessOrEqual(t, len(codec.byData), maxDecodedSessions)
}

// The values of bytes no view asks for any more (a session written since)
// are dropped once idle for decodedSessionIdle; those in use stay.
func TestDecodedSessionsNotAskedForAreDropped(t *testing.T) {
	gob := &countingCodec{}
	codec := newDecodedSessions(gob)
	now := time.Date(2026, 12, 4, 22, 0, 0, 0, time.UTC)
	codec.now = func() time.Time { return now }
	encode := func(id int64) []byte {
		data, err := codec.Encode(now.Add(time.Hour), map[string]any{keyUserID: id})
		require.NoError(t, err)
		return data
	}
	inUse, written := encode(1), encode(2)
	for _, data := range [][]byte{inUse, written} {
		_, _, err := codec.Decode(data)
		require.NoError(t, err)
	}
	for range 4 {
		now = now.Add(decodedSessionIdle / 2)
		_, _, err := codec.Decode(inUse) // a view every half minute
		require.NoError(t, err)
	}
	_, _, err := codec.Decode(encode(3)) // new bytes: a sweep
	require.NoError(t, err)
	assert.Len(t, codec.byData, 2, "the session in use and the new one; the idle one dropped")
	assert.Contains(t, codec.byData, string(inUse))
	assert.NotContains(t, codec.byData, string(written))
	assert.Equal(t, int64(3), gob.decodes.Load(), "the session in use was decoded once")
}
