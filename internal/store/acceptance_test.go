package store

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSetVerdictReturnsTheVerdictItReplaced(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	at := time.Date(2026, 11, 3, 10, 0, 0, 0, time.UTC)
	first := RunVerdict{Namespace: "team-vision", JobName: "train", Team: "vision", Verdict: "accepted", DecidedBy: "alice", DecidedAt: at}
	before, err := s.SetVerdict(ctx, first)
	require.NoError(t, err)
	assert.Equal(t, RunVerdict{}, before, "no verdict before the first")
	before, err = s.SetVerdict(ctx, RunVerdict{Namespace: "team-vision", JobName: "train", Team: "vision", Verdict: "rejected", Note: "loss diverged", DecidedBy: "bob", DecidedAt: at.Add(time.Hour)})
	require.NoError(t, err)
	assert.Equal(t, "accepted", before.Verdict)
	assert.Equal(t, "alice", before.DecidedBy)
	now, err := s.Verdict(ctx, "team-vision", "train")
	require.NoError(t, err)
	assert.Equal(t, "rejected", now.Verdict)
	assert.Equal(t, "loss diverged", now.Note)
}
