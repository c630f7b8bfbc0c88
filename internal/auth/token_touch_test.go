package auth

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// A script calling the API many times a second writes its token's last use
// about once a minute, though the token it reads is a kept copy whose last
// use stays as it was read.
func TestATokensUseIsWrittenOnceAMinute(t *testing.T) {
	var touches tokenTouches
	start := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	assert.True(t, touches.due(1, nil, start), "a token never used: its first use is written")
	for s := 1; s < 60; s++ {
		assert.False(t, touches.due(1, nil, start.Add(time.Duration(s)*time.Second)), "the kept copy still says never used, %d s on", s)
	}
	assert.True(t, touches.due(1, nil, start.Add(time.Minute)), "a minute on")

	recent := start.Add(90 * time.Second) // written by another replica
	assert.False(t, touches.due(1, &recent, start.Add(2*time.Minute)), "the row's own last use counts")
	assert.True(t, touches.due(2, nil, start.Add(2*time.Minute)), "each token apart")

	at := start.Add(3 * time.Minute)
	assert.True(t, touches.due(1, nil, at))
	touches.failed(1, at)
	assert.True(t, touches.due(1, nil, at.Add(time.Second)), "a use whose write failed is written again on the next call")
}
