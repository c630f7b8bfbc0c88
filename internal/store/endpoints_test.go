package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEndpointUsageAddsUpPerHour(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	h := time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC)
	require.NoError(t, s.AddEndpointUsage(ctx, []EndpointUsageHour{
		{Team: "vision", Name: "llm", Hour: h.Add(5 * time.Minute), Requests: 3, Errors: 1, PromptTokens: 10, CompletionTokens: 20},
		{Team: "vision", Name: "other", Hour: h, Requests: 7},
	}))
	require.NoError(t, s.AddEndpointUsage(ctx, []EndpointUsageHour{
		{Team: "vision", Name: "llm", Hour: h.Add(59 * time.Minute), Requests: 2, CompletionTokens: 5},
		{Team: "vision", Name: "llm", Hour: h.Add(61 * time.Minute), Requests: 1},
	}))
	rows, err := s.EndpointHourlyUsage(ctx, "vision", "llm", h, h.Add(2*time.Hour))
	require.NoError(t, err)
	require.Len(t, rows, 2)
	assert.Equal(t, int64(5), rows[0].Requests, "the 14:00 hour adds both flushes")
	assert.Equal(t, int64(1), rows[0].Errors)
	assert.Equal(t, int64(25), rows[0].CompletionTokens)
	assert.True(t, rows[0].Hour.Equal(h), "hours start on the hour: %s", rows[0].Hour)
	assert.Equal(t, int64(1), rows[1].Requests, "15:01 belongs to the 15:00 hour")
	team, err := s.EndpointHourlyUsageOfTeam(ctx, "vision", h, h.Add(time.Hour))
	require.NoError(t, err)
	assert.Len(t, team, 2, "both endpoints' 14:00 hour")
}

func TestEndpointKeysRevokeOnce(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	now := time.Now().UTC()
	k, err := s.CreateEndpointKey(ctx, EndpointKey{Team: "vision", Name: "llm", Label: "ci", Hash: []byte("h1"), Prefix: "gek_abc",
		CreatedBy: "alice", CreatedAt: now, ExpiresAt: now.Add(time.Hour)})
	require.NoError(t, err)
	_, err = s.RevokeEndpointKey(ctx, "vision", "other", k.ID, "bob", now)
	assert.True(t, errors.Is(err, ErrNotFound), "a key is revoked through its own endpoint only: %v", err)
	got, err := s.RevokeEndpointKey(ctx, "vision", "llm", k.ID, "bob", now)
	require.NoError(t, err)
	assert.Equal(t, "ci", got.Label)
	assert.False(t, got.Active(now))
	_, err = s.RevokeEndpointKey(ctx, "vision", "llm", k.ID, "bob", now)
	assert.True(t, errors.Is(err, ErrNotFound), "revoked once")
	byHash, err := s.EndpointKeyByHash(ctx, []byte("h1"))
	require.NoError(t, err)
	assert.NotNil(t, byHash.RevokedAt)
}
