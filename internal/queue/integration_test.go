package queue

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gantry-dev/gantry/internal/devcluster"
	"github.com/gantry-dev/gantry/internal/devcluster/stacktest"
	"github.com/gantry-dev/gantry/internal/kube"
)

// TestTeamOverviewFromLocalCluster reads the seeded team vision's quota
// through the informer cache and checks it against deploy/local/teams.yaml
// and the live ClusterQueue.
func TestTeamOverviewFromLocalCluster(t *testing.T) {
	env := stacktest.Stack(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	teams, err := devcluster.LoadTeams(env.Layout.Deploy("local", "teams.yaml"))
	require.NoError(t, err)
	var seeded *devcluster.Team
	for i := range teams.Teams {
		if teams.Teams[i].Name == "vision" {
			seeded = &teams.Teams[i]
		}
	}
	require.NotNil(t, seeded, "teams.yaml seeds team vision")

	clients, err := kube.NewClients(env.RESTConfig)
	require.NoError(t, err)
	cache, err := kube.NewCache(clients.Kueue, 0)
	require.NoError(t, err)
	cache.Start(ctx)
	require.NoError(t, cache.WaitForSync(ctx))

	got, err := NewReader(cache).TeamOverview("vision")
	require.NoError(t, err)

	assert.Equal(t, "team-vision", got.ClusterQueue)
	assert.Equal(t, "team-vision", got.Namespace)
	assert.Equal(t, "default", got.LocalQueue)
	assert.Equal(t, teams.Cohort, got.Cohort)
	assert.True(t, got.Active, "Kueue reports the queue active: %s", got.InactiveReason)

	nominal := map[string]int64{}
	for _, f := range got.Flavors {
		nominal[f.Flavor+"/"+f.Resource] = f.Nominal
	}
	checked := 0
	for flavor, list := range seeded.Quotas {
		for res, q := range list {
			key := flavor + "/" + string(res)
			assert.Equal(t, q.Value(), nominal[key], key)
			checked++
		}
	}
	require.Positive(t, checked)
	gpus := 0
	for _, f := range got.Accelerators() {
		gpus += int(f.Nominal)
	}
	assert.Positive(t, gpus, "vision has GPU quota")

	live, err := clients.Kueue.KueueV1beta2().ClusterQueues().Get(ctx, "team-vision", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, Overview("vision", live, nil).Flavors, got.Flavors, "cache agrees with the API server")
}
