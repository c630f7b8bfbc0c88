package e2e

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gantry-dev/gantry/internal/acceptance"
	"github.com/gantry-dev/gantry/internal/audit"
	"github.com/gantry-dev/gantry/internal/devcluster/simworkload"
	"github.com/gantry-dev/gantry/internal/devcluster/stacktest"
	"github.com/gantry-dev/gantry/internal/launch"
	"github.com/gantry-dev/gantry/internal/store"
)

// Two portal processes share a database and a Lease; the one leading runs
// the acceptance loop. Killed (SIGKILL) in the middle of step 5, after it
// chose the pod to delete, it leaves the run to the other replica, which
// finishes it: one launch, one deleted pod, every step passed.
func TestKillingTheLeadingPortalMidRunLetsTheOtherReplicaFinishIt(t *testing.T) {
	env := stacktest.Stack(t)
	dsn := stacktest.Postgres(t)
	opts := append(replicaOptions(dsn, env.Namespace(t, "lease", nil)),
		WithEnv("GANTRY_SEED_TEMPLATES", filepath.Join(env.Layout.Root, "deploy", "templates")),
		WithEnv("GANTRY_ACCEPTANCE_INTERVAL", "300ms"),
		WithEnv("GANTRY_ACCEPTANCE_STEP_TIMEOUT", "3m"))
	portals := []*Portal{LaunchPortal(t, opts...), LaunchPortal(t, opts...)}
	for _, p := range portals {
		p.WaitHealthy(t)
	}
	env.SimulateWorkloads(t, "team-vision", simworkload.DefaultFigures(), simworkload.DefaultTimings())

	ctx := context.Background()
	db, err := store.Open(ctx, dsn)
	require.NoError(t, err)
	defer db.Close()
	svc := &acceptance.Service{Store: db, Audit: audit.New(db, nil)}
	erin := acceptance.Person{Username: "erin", Groups: []string{"gantry-admins"}, Admin: true, Via: "test"}
	run, err := svc.Start(ctx, erin, "h100-sxm-ib-training")
	require.NoError(t, err)

	leader, other := leaderOf(t, portals, 30*time.Second)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		row, err := db.AcceptanceRun(ctx, run.ID)
		require.NoError(c, err)
		assert.Contains(c, string(row.State), `"deletedPod"`)
	}, 3*time.Minute, 100*time.Millisecond, "the run reaches step 5's deletion")
	leader.Kill(t)
	mid, err := svc.Run(ctx, erin, run.ID)
	require.NoError(t, err)
	require.Equal(t, acceptance.StatusRunning, mid.Status, "the run had not finished when its leader was killed")
	require.Eventually(t, func() bool { return leads(t, other) }, 30*time.Second, 100*time.Millisecond, "the other replica takes the Lease")

	var rep acceptance.Report
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		rep, err = svc.Run(ctx, erin, run.ID)
		require.NoError(c, err)
		assert.NotEqual(c, acceptance.StatusRunning, rep.Status, "at: %s", rep.Verdict)
	}, 4*time.Minute, time.Second)
	for _, s := range rep.Steps {
		assert.Equal(t, acceptance.StatusPassed, s.Status, "step %d %s: %s", s.Number, s.Title, s.Summary)
	}
	launches, err := db.AuditEntries(ctx, store.AuditFilter{Action: launch.ActionLaunch, Limit: 100})
	require.NoError(t, err)
	n := 0
	for _, e := range launches {
		if e.Target == rep.Namespace+"/"+rep.Job {
			n++
		}
	}
	assert.Equal(t, 1, n, "the job was launched once")
	deletions, err := db.AuditEntries(ctx, store.AuditFilter{Action: acceptance.ActionPodDelete, Limit: 100})
	require.NoError(t, err)
	assert.Len(t, deletions, 1, "one pod was deleted")
}
