package devcluster_test

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gantry-dev/gantry/internal/catalog"
	"github.com/gantry-dev/gantry/internal/devcluster/stacktest"
	"github.com/gantry-dev/gantry/internal/naming"
)

// gauge reads the one current value of a DCGM series of a pod.
func gauge(c *assert.CollectT, env *stacktest.Env, metric, namespace, pod string) float64 {
	series, err := promQuery(env.PrometheusURL, fmt.Sprintf(`%s{namespace=%q,pod=%q}`, metric, namespace, pod))
	require.NoError(c, err)
	require.Len(c, series, 1, "%s of %s", metric, pod)
	v, err := strconv.ParseFloat(series[0].Value[1].(string), 64)
	require.NoError(c, err)
	return v
}

// TestSimulatedTelemetryFollowsTheHardware: a 1g.10gb MIG slice never
// reports more than its 10 GB or more power than its seventh of an A100
// board; a pod forced to 0 % with sim.gantry.dev/gpu-util reports 0 %, an
// idle board's power and little memory.
func TestSimulatedTelemetryFollowsTheHardware(t *testing.T) {
	env := stacktest.Stack(t)
	team := env.Team(t, stacktest.TeamSpec{Quotas: map[string]corev1.ResourceList{
		migPool:       quota(string(mig1g), "1", "cpu", "4", "memory", "16Gi"),
		inferencePool: quota("nvidia.com/gpu", "1", "cpu", "4", "memory", "16Gi"),
	}})
	ns := team.Namespace()
	slice := jobBuilder{name: "slice", namespace: ns, requests: quota(string(mig1g), "1", "cpu", "1", "memory", "4Gi"),
		annotations: map[string]string{"gantry.dev/simulate-duration": "10m", naming.AnnotationSimGPUUtil: "100"}}.obj()
	// The slice's pod is a notebook's: it has the notebook profile, but the annotation forces 100 %.
	slice.Spec.Template.Labels = stacktest.WorkloadLabels(team.Name, slice.Name, catalog.KindNotebook)
	_, err := env.Kube.BatchV1().Jobs(ns).Create(t.Context(), slice, metav1.CreateOptions{})
	require.NoError(t, err)
	idle := createJob(t, env, jobBuilder{name: "idle", namespace: ns, requests: quota("nvidia.com/gpu", "1", "cpu", "1", "memory", "4Gi"),
		annotations: map[string]string{"gantry.dev/simulate-duration": "10m", naming.AnnotationSimGPUUtil: "0"}})
	slicePod := requireRunningOnPool(t, env, ns, "batch.kubernetes.io/job-name="+slice.Name, migPool, 1)[0]
	idlePod := requireRunningOnPool(t, env, ns, "batch.kubernetes.io/job-name="+idle.Name, inferencePool, 1)[0]

	require.EventuallyWithT(t, func(c *assert.CollectT) {
		util := gauge(c, env, "DCGM_FI_DEV_GPU_UTIL", ns, slicePod.Name)
		used := gauge(c, env, "DCGM_FI_DEV_FB_USED", ns, slicePod.Name)
		free := gauge(c, env, "DCGM_FI_DEV_FB_FREE", ns, slicePod.Name)
		power := gauge(c, env, "DCGM_FI_DEV_POWER_USAGE", ns, slicePod.Name)
		assert.Equal(c, 100.0, util, "forced to 100 %")
		// Flat out, the slice fills most of its memory but stays within 10 GB.
		assert.Greater(c, used, 8000.0, "MiB used by a busy 1g.10gb slice")
		assert.LessOrEqual(c, used*1024*1024, 10e9, "a 1g.10gb slice reports at most 10 GB")
		assert.InDelta(c, 9728, used+free, 0.5, "used + free is the slice's framebuffer")
		assert.LessOrEqual(c, power, 400.0/7, "a seventh of a 400 W A100 board")
	}, 90*time.Second, time.Second, "telemetry of the MIG slice %s", slicePod.Name)

	require.EventuallyWithT(t, func(c *assert.CollectT) {
		util := gauge(c, env, "DCGM_FI_DEV_GPU_UTIL", ns, idlePod.Name)
		used := gauge(c, env, "DCGM_FI_DEV_FB_USED", ns, idlePod.Name)
		power := gauge(c, env, "DCGM_FI_DEV_POWER_USAGE", ns, idlePod.Name)
		assert.Equal(c, 0.0, util, "forced to 0 %")
		assert.LessOrEqual(c, used, 0.05*46068, "an idle L40S holds only its CUDA context")
		assert.GreaterOrEqual(c, power, 30.0, "an idle L40S still draws power")
		assert.LessOrEqual(c, power, 45.0, "an idle L40S draws far below its 350 W limit")
	}, 90*time.Second, time.Second, "telemetry of the idle pod %s", idlePod.Name)
}
