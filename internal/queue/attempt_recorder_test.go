package queue

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/gantry-dev/gantry/internal/store"
)

// writtenMoments is a moment store that counts each moment's writes, and
// refuses them while down.
type writtenMoments struct {
	mu     sync.Mutex
	writes map[string]int
	down   bool
}

func (s *writtenMoments) RecordJobMoment(_ context.Context, m store.JobMoment, _ *store.MomentNotice) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down {
		return false, errors.New("database restarting")
	}
	if s.writes == nil {
		s.writes = map[string]int{}
	}
	s.writes[m.Namespace+"|"+m.Job+"|"+m.MomentKey]++
	return true, nil
}

// The recorder hears each moment again on every update of its pod or
// Workload: it writes each once, retries one the store refused, and never
// takes two moments for one, even when their names joined together read
// the same.
func TestEachMomentSeenIsWrittenOnce(t *testing.T) {
	ctx := context.Background()
	db := &writtenMoments{}
	r := &AttemptRecorder{Store: db, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	at := time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC)
	moment := func(ns, job, key string) store.JobMoment {
		return store.JobMoment{Team: "vision", Namespace: ns, Job: job, MomentKey: key, Kind: "started", At: at}
	}
	a := moment("team-vision", "train", "pod-1/x")
	b := moment("team-vision", "train/pod-1", "x") // joined with "/", the same as a
	c := moment("team-vision", "train", "pod-2")

	for range 3 { // three updates of the same objects
		r.offer([]store.JobMoment{a, b})
		r.Flush(ctx)
	}
	db.down = true
	r.offer([]store.JobMoment{a, c})
	r.Flush(ctx) // c refused, a already written
	db.down = false
	r.Flush(ctx)
	r.Flush(ctx)

	assert.Equal(t, map[string]int{
		"team-vision|train|pod-1/x": 1,
		"team-vision|train/pod-1|x": 1,
		"team-vision|train|pod-2":   1,
	}, db.writes)
}
