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
	"k8s.io/utils/ptr"

	"github.com/gantry-dev/gantry/internal/catalog"
	"github.com/gantry-dev/gantry/internal/devcluster/stacktest"
	"github.com/gantry-dev/gantry/internal/launch"
	"github.com/gantry-dev/gantry/internal/naming"
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

// A bare pod created with kubectl in the team's namespace, with only the
// queue label (Kueue's pod integration makes it a Workload owned by the
// pod), is in the team's job list marked as created outside Gantry, and
// leaves it when deleted.
func TestBarePodCreatedWithKubectlIsListedAsCreatedOutsideGantry(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bare-pod", Namespace: f.team.Namespace(),
		Labels:      map[string]string{naming.LabelQueueName: naming.LocalQueue},
		Annotations: map[string]string{"gantry.dev/simulate-duration": "10m"}},
		Spec: stacktest.RestrictedPodSpec(corev1.ResourceList{"cpu": resource.MustParse("1")})}
	_, err := f.env.Kube.CoreV1().Pods(f.team.Namespace()).Create(ctx, pod, metav1.CreateOptions{})
	require.NoError(t, err)

	r := launch.Reader{Templates: f.db, Records: f.db, Jobs: f.jobs}
	listed := func(c *assert.CollectT) (launch.Status, bool) {
		page, err := r.JobList(launch.JobFilter{Teams: []string{f.team.Name}}, 1, 50)
		require.NoError(c, err)
		for _, st := range page.Statuses {
			if st.Name == "bare-pod" {
				return st, true
			}
		}
		return launch.Status{}, false
	}
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		st, ok := listed(c)
		require.True(c, ok, "the kubectl pod is in the team's list")
		assert.True(c, st.Outside, "marked as created outside Gantry")
		assert.Equal(c, f.team.Name, st.Team)
		assert.NotEmpty(c, st.Phase)
	}, time.Minute, 250*time.Millisecond)
	rec, _, err := r.Outside(f.team.Name, "bare-pod")
	require.NoError(t, err, "and has a job page")
	assert.True(t, launch.IsOutside(rec))

	require.NoError(t, f.env.Kube.CoreV1().Pods(f.team.Namespace()).Delete(ctx, "bare-pod", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}))
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		_, ok := listed(c)
		assert.False(c, ok, "a deleted pod leaves the list")
	}, 2*time.Minute, 500*time.Millisecond)
}
