package notify

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gantry-dev/gantry/internal/devcluster/storetest"
	"github.com/gantry-dev/gantry/internal/queue"
	"github.com/gantry-dev/gantry/internal/store"
)

// countedWebhooks counts the reads of a team's webhook.
type countedWebhooks struct {
	*store.Store
	reads atomic.Int64
}

func (c *countedWebhooks) TeamWebhook(ctx context.Context, team string) (store.TeamWebhook, error) {
	c.reads.Add(1)
	return c.Store.TeamWebhook(ctx, team)
}

// Every team page view shows the team's webhook and its latest deliveries:
// they are read once and kept until a replica sets the webhook or a
// delivery is queued or attempted.
func TestKeptWebhooksAreReadOnceUntilOneChanges(t *testing.T) {
	ctx := context.Background()
	db, changes, _ := storetest.Listening(t)

	counted := &countedWebhooks{Store: db}
	w := Webhooks{Store: counted, Kept: store.NewKept[TeamWebhook](changes, store.TopicWebhooks)}
	require.NoError(t, db.SetTeamWebhook(ctx, store.TeamWebhook{Team: "ml", URL: "https://chat.example.com/hook", UpdatedBy: "lead"}))
	// The notice of that write may come after the first read: wait for a
	// read to be kept.
	require.Eventually(t, func() bool {
		n := counted.reads.Load()
		_, err := w.Get(ctx, "ml")
		require.NoError(t, err)
		return counted.reads.Load() == n
	}, 5*time.Second, 10*time.Millisecond)
	reads := counted.reads.Load()
	for range 5 {
		got, err := w.Get(ctx, "ml")
		require.NoError(t, err)
		assert.Equal(t, "https://chat.example.com/hook", got.URL)
	}
	assert.Equal(t, reads, counted.reads.Load(), "five views read nothing")

	require.NoError(t, db.SetTeamWebhook(ctx, store.TeamWebhook{Team: "ml", URL: "https://chat.example.com/other", UpdatedBy: "lead"}))
	assert.Eventually(t, func() bool {
		got, err := w.Get(ctx, "ml")
		require.NoError(t, err)
		return got.URL == "https://chat.example.com/other"
	}, 5*time.Second, 10*time.Millisecond, "a webhook set on any replica is shown")

	_, err := db.RecordLaunch(ctx, store.Launch{LaunchID: "l1", Team: "ml", Namespace: "team-ml", Name: "train", Kind: "training",
		Template: "pytorch", TemplateVersion: 1, Owner: "alice", Parameters: json.RawMessage(`{}`)})
	require.NoError(t, err)
	m := store.JobMoment{Team: "ml", Namespace: "team-ml", Job: "train", MomentKey: "wl-finish/u1", Kind: store.MomentEnded,
		At: time.Now().UTC().Truncate(time.Second), Ending: string(queue.EndingFailed), Cause: string(queue.CauseExitCode),
		Words: "Container main of pod train-0-x exited with code 3."}
	_, err = db.RecordJobMoment(ctx, m, (&queue.AttemptRecorder{Store: db}).Notice(m))
	require.NoError(t, err)
	assert.Eventually(t, func() bool {
		got, err := w.Get(ctx, "ml")
		require.NoError(t, err)
		return len(got.Deliveries) == 1
	}, 5*time.Second, 10*time.Millisecond, "a queued delivery is shown")
}
