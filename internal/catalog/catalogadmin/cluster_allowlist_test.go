package catalogadmin_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gantry-dev/gantry/internal/catalog/catalogadmin"
)

// recordingCluster keeps what it was asked to apply and fails with err.
type recordingCluster struct {
	applied [][]string
	err     error
}

func (r *recordingCluster) Apply(_ context.Context, registries []string) error {
	r.applied = append(r.applied, registries)
	return r.err
}

func TestSavedAllowlistGoesToTheCluster(t *testing.T) {
	cases := map[string]struct {
		clusterErr   error
		wantSyncErr  bool
		wantAfterRun []string
	}{
		"cluster takes it":    {wantAfterRun: []string{"nvcr.io", "ghcr.io/acme"}},
		"cluster write fails": {clusterErr: errors.New("connection refused"), wantSyncErr: true, wantAfterRun: []string{"nvcr.io", "ghcr.io/acme"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			admin, db := newAdmin(t)
			cluster := &recordingCluster{err: tc.clusterErr}
			admin.Cluster = cluster
			ctx := context.Background()

			regs, err := admin.SetAllowlist(ctx, erin, "nvcr.io\nghcr.io/acme/\n")
			assert.Equal(t, tc.wantAfterRun, regs)
			var syncErr *catalogadmin.ClusterSyncError
			if tc.wantSyncErr {
				require.ErrorAs(t, err, &syncErr)
				assert.Contains(t, syncErr.Error(), "cluster's copy (which kubectl is held to) could not be updated")
				assert.NotContains(t, syncErr.Error(), "connection refused", "the page shows a sentence, not the raw error")
			} else {
				require.NoError(t, err)
			}
			assert.Equal(t, [][]string{tc.wantAfterRun}, cluster.applied)
			stored, err := db.ImageRegistries(ctx)
			require.NoError(t, err)
			assert.Equal(t, tc.wantAfterRun, stored, "Postgres is written first, whatever the cluster says")
		})
	}
}

func TestStartUpSyncWritesTheStoredAllowlist(t *testing.T) {
	admin, db := newAdmin(t)
	ctx := context.Background()
	_, err := db.SeedImageAllowlist(ctx, []string{"nvcr.io", "quay.io/jupyter"}, "config")
	require.NoError(t, err)
	cluster := &recordingCluster{}
	admin.Cluster = cluster
	require.NoError(t, admin.SyncClusterAllowlist(ctx))
	assert.Equal(t, [][]string{{"nvcr.io", "quay.io/jupyter"}}, cluster.applied)

	cluster.err = errors.New("forbidden")
	require.Error(t, admin.SyncClusterAllowlist(ctx))
}
