package devcluster

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
)

// A run's extra GPU nodes get a DCGM targets file of their own, which the
// dcgm-added job's glob reads, and lose it when the run ends.
func TestWriteDCGMTargetsAddsARunsNodesBesideTheStacks(t *testing.T) {
	l := Layout{Root: t.TempDir()}
	require.NoError(t, os.MkdirAll(l.Run(), 0o755))
	s := &Stack{layout: l}
	changed, err := writePrometheusConfig(s)
	require.NoError(t, err)
	assert.True(t, changed)
	changed, err = writePrometheusConfig(s)
	require.NoError(t, err)
	assert.False(t, changed, "an unchanged configuration is not rewritten (nor Prometheus reloaded)")

	h100 := Pool{Name: "h100", Labels: map[string]string{"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"},
		Capacity: map[corev1.ResourceName]string{"nvidia.com/gpu": "8", "cpu": "192"}}
	remove, err := WriteDCGMTargets(l, "load", h100, []string{"load-0", "load-1"})
	require.NoError(t, err)
	config, err := os.ReadFile(s.prometheusConfigFile())
	require.NoError(t, err)
	glob := filepath.Join(l.Run(), "prometheus-dcgm-added-*.json")
	assert.Contains(t, string(config), glob)
	matches, err := filepath.Glob(glob)
	require.NoError(t, err)
	require.Equal(t, []string{filepath.Join(l.Run(), "prometheus-dcgm-added-load.json")}, matches)

	b, err := os.ReadFile(matches[0])
	require.NoError(t, err)
	var groups []targetGroup
	require.NoError(t, json.Unmarshal(b, &groups))
	require.Len(t, groups, 2)
	assert.Equal(t, map[string]string{"__metrics_path__": "/metrics/nodes/load-1/metrics/dcgm", "Hostname": "load-1",
		"modelName": "NVIDIA-H100-80GB-HBM3", "gantry_pool": "h100"}, groups[1].Labels)

	require.NoError(t, remove())
	matches, err = filepath.Glob(glob)
	require.NoError(t, err)
	assert.Empty(t, matches)
	require.NoError(t, remove(), "removing twice is fine")

	cpu := Pool{Name: "cpu", Capacity: map[corev1.ResourceName]string{"cpu": "64"}}
	assert.Empty(t, dcgmGroups(cpu, []string{"cpu-0"}), "a pool without GPUs has no DCGM series")
}
