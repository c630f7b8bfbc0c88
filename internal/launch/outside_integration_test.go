package launch_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gantry-dev/gantry/internal/catalog"
	"github.com/gantry-dev/gantry/internal/devcluster/stacktest"
	"github.com/gantry-dev/gantry/internal/launch"
	"github.com/gantry-dev/gantry/internal/queue"
)

// A Job created with kubectl in the team's namespace (labelled as the
// admission policy requires, but with no launch through the portal) is in
// the team's job list marked as created outside Gantry, and has a status
// and a stand-in record for its job page; a job launched through the
// portal is not marked.
func TestJobCreatedWithKubectlIsListedAsCreatedOutsideGantry(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	res, err := f.svc.Launch(ctx, f.alice, launch.Request{Team: f.team.Name, Template: "pytorch-train",
		Values: map[string]string{"gpus": "1", "cpu": "4", "memory": "16Gi"}, LaunchID: launch.NewLaunchID()})
	require.NoError(t, err)
	job := stacktest.CompliantJob(f.team.Name, "by-kubectl", corev1.ResourceList{"cpu": resource.MustParse("1")})
	job.Spec.Template.Annotations = map[string]string{"gantry.dev/simulate-duration": "10m"}
	_, err = f.env.Kube.BatchV1().Jobs(f.team.Namespace()).Create(ctx, job, metav1.CreateOptions{})
	require.NoError(t, err)

	r := launch.Reader{Templates: f.db, Records: f.db, Jobs: f.jobs}
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		page, err := r.JobList(launch.JobFilter{Teams: []string{f.team.Name}}, 1, 50)
		require.NoError(c, err)
		require.NoError(c, r.MarkOutside(ctx, page.Statuses))
		byName := map[string]launch.Status{}
		for _, st := range page.Statuses {
			byName[st.Name] = st
		}
		got, ok := byName["by-kubectl"]
		require.True(c, ok, "the kubectl job is in the team's list")
		assert.True(c, got.Outside, "marked as created outside Gantry")
		assert.Equal(c, catalog.KindTraining, got.Kind)
		assert.Contains(c, []queue.Phase{queue.PhaseRunning, queue.PhaseCreating, queue.PhaseAdmitted}, got.Phase)
		require.Contains(c, byName, res.Name)
		assert.False(c, byName[res.Name].Outside, "a job launched through the portal is the portal's")
	}, time.Minute, 250*time.Millisecond)

	rec, st, err := r.Outside(f.team.Name, "by-kubectl")
	require.NoError(t, err)
	assert.True(t, launch.IsOutside(rec))
	assert.Equal(t, f.team.Namespace(), rec.Namespace)
	assert.True(t, st.Outside)
	_, _, err = r.Outside(f.team.Name, "no-such-job")
	require.Error(t, err)
}
