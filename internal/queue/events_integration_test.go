package queue

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gantry-dev/gantry/internal/kube"
)

func TestJobStatusShowsKueuesEventsAboutAJobThatCannotFit(t *testing.T) {
	s := newStatusEnv(t)
	clients, err := kube.NewClients(s.env.RESTConfig)
	require.NoError(t, err)
	events, err := kube.NewEventCache(clients.Kube, 0)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	events.Start(ctx)
	syncCtx, cancelSync := context.WithTimeout(ctx, time.Minute)
	defer cancelSync()
	require.NoError(t, events.WaitForSync(syncCtx))
	s.reader.Events = events

	// 16 GPUs never fit the team's 8: Kueue says so in a Pending event on the Workload.
	s.gpuJob(t, "toobig", 16, "batch", nil)
	var st JobStatus
	require.Eventually(t, func() bool {
		st = s.status(t, "toobig")
		return slices.ContainsFunc(st.Events, func(e JobEvent) bool { return e.Reason == "Pending" })
	}, time.Minute, 250*time.Millisecond, "Kueue's Pending event shows; events so far: %+v", st.Events)

	i := slices.IndexFunc(st.Events, func(e JobEvent) bool { return e.Reason == "Pending" })
	pending := st.Events[i]
	assert.Equal(t, "Warning", pending.Type)
	assert.Contains(t, pending.Message, h100, "names the flavor it cannot fit")
	assert.True(t, strings.HasPrefix(pending.Object, "Workload "), "about the Workload, got %q", pending.Object)
	assert.GreaterOrEqual(t, pending.Count, int32(1))
	assert.WithinDuration(t, time.Now(), pending.LastSeen, 2*time.Minute)
	assert.True(t, slices.ContainsFunc(st.Events, func(e JobEvent) bool {
		return e.Reason == "CreatedWorkload" && e.Object == "Job toobig"
	}), "Kueue's event on the Job itself shows too: %+v", st.Events)

	// Events of other namespaces stay out of the cache.
	other, err := events.EventsAbout("default", "Job", "toobig")
	require.NoError(t, err)
	assert.Empty(t, other)
}
