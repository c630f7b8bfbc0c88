package reclaim_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gantry-dev/gantry/internal/audit"
	"github.com/gantry-dev/gantry/internal/devcluster/stacktest"
	"github.com/gantry-dev/gantry/internal/reclaim"
	"github.com/gantry-dev/gantry/internal/store"
)

var errKilled = errors.New("leader killed")

// dyingScaler is the cluster as a leader sees it that is killed during its
// next scale: before the request reaches the API server, or after the
// change is made and before the leader records that it was.
type dyingScaler struct {
	*cluster
	afterApply bool
}

func (d dyingScaler) ScaleStatefulSet(ctx context.Context, ns, name string, replicas int32, episode int64) (bool, error) {
	if d.afterApply {
		if _, err := d.cluster.ScaleStatefulSet(ctx, ns, name, replicas, episode); err != nil {
			return false, err
		}
	}
	return false, errKilled
}

func (d dyingScaler) ScaleDeployment(ctx context.Context, ns, name string, replicas int32, episode int64) (bool, error) {
	if d.afterApply {
		if _, err := d.cluster.ScaleDeployment(ctx, ns, name, replicas, episode); err != nil {
			return false, err
		}
	}
	return false, errKilled
}

// TestLeaderKilledMidReclaimActsOnce: the leader dies while it stops an
// idle notebook or scales an idle endpoint down, before the change reaches
// the cluster or after; when it got there, the owner starts the job again
// before the next leader scans, half an hour later. The next leader finishes
// the work: the notebook stopped once and the endpoint scaled once (not
// again after the owner's restart), one audit entry each, the episode
// closed as stopped.
func TestLeaderKilledMidReclaimActsOnce(t *testing.T) {
	cases := map[string]struct {
		job, kind  string
		afterApply bool
		action     string
		// replicas at the end: the reclaim's, or the owner's after it
		want int32
	}{
		"notebook, before the StatefulSet changed":                {job: "nb", kind: "notebook", action: reclaim.ActionStop, want: 0},
		"notebook, after the StatefulSet changed, owner resumed":  {job: "nb", kind: "notebook", afterApply: true, action: reclaim.ActionStop, want: 1},
		"endpoint, before the Deployment changed":                 {job: "ep", kind: "inference", action: reclaim.ActionScale, want: 1},
		"endpoint, after the Deployment changed, owner scaled up": {job: "ep", kind: "inference", afterApply: true, action: reclaim.ActionScale, want: 3},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			db, err := store.Open(ctx, stacktest.Postgres(t))
			require.NoError(t, err)
			t.Cleanup(func() { _ = db.Close() })
			require.NoError(t, store.Migrate(ctx, db.SQL(), slog.New(slog.DiscardHandler)))
			t0 := time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)
			clk := &clock{t: t0}
			c := &cluster{started: t0.Add(-2 * time.Hour), replicas: map[string]int32{tc.job: 1}, scales: map[string]int{}}
			if tc.kind == "inference" {
				c.replicas[tc.job] = 3
			}
			_, err = db.RecordLaunch(ctx, store.Launch{LaunchID: "id-" + tc.job, Team: "vision", Namespace: "team-vision", Name: tc.job, Kind: tc.kind,
				Template: "t", TemplateVersion: 1, Owner: "alice", Parameters: json.RawMessage(`{}`), Objects: store.StringList{}})
			require.NoError(t, err)
			leader := func(s reclaim.Scaler) *reclaim.Reclaimer {
				return &reclaim.Reclaimer{Settings: reclaim.DefaultSettings(), Store: db, Teams: db, Metrics: quiet{}, Jobs: c, Scaler: s,
					Templates: templates{}, Audit: audit.New(db, clk.Now), Now: clk.Now, Log: slog.New(slog.DiscardHandler)}
			}
			dying := leader(dyingScaler{cluster: c, afterApply: tc.afterApply})
			if tc.kind == "notebook" {
				require.NoError(t, dying.Scan(ctx), "the warning needs no scale")
				clk.Add(16 * time.Minute) // past the grace
			}
			require.ErrorIs(t, dying.Scan(ctx), errKilled)
			require.Len(t, auditOf(t, db, tc.action), 1, "the action was recorded and audited before the cluster was touched")
			if tc.afterApply {
				require.Equal(t, 1, c.scales[tc.job], "the change reached the cluster")
				owner := int32(1)
				if tc.kind == "inference" {
					owner = 3
				}
				c.mu.Lock()
				c.replicas[tc.job] = owner // the owner starts it again, as from the job page
				c.started = clk.Now()
				c.mu.Unlock()
			} else {
				require.Zero(t, c.scales[tc.job])
			}

			clk.Add(30 * time.Minute) // a slow take-over: long past a grace of two scan intervals
			next := leader(c)
			require.NoError(t, next.Scan(ctx))
			require.NoError(t, leader(c).Scan(ctx))
			assert.Equal(t, 1, c.scales[tc.job], "the job is scaled once across both leaders")
			assert.Equal(t, tc.want, c.replicas[tc.job])
			assert.Len(t, auditOf(t, db, tc.action), 1, "and audited once")
			e, err := db.LatestIdleEpisode(ctx, "team-vision", tc.job)
			require.NoError(t, err)
			assert.Equal(t, e.ID, c.episode[tc.job], "the cluster carries the episode it applied")
			if tc.kind == "notebook" {
				require.NotNil(t, e.ClosedAt, "the next leader closed the stop")
				assert.Equal(t, "stopped", e.CloseReason)
			}
		})
	}
}
