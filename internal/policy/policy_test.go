package policy_test

import (
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gantry-dev/gantry/internal/catalog"
	"github.com/gantry-dev/gantry/internal/launch"
	"github.com/gantry-dev/gantry/internal/naming"
	"github.com/gantry-dev/gantry/internal/policy"
)

var rules = policy.Rules{Registries: []string{"nvcr.io", "quay.io/jupyter", "docker.io/vllm"}}

func training(t *testing.T) (catalog.Template, catalog.Values, catalog.Rendered) {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	ts, err := catalog.LoadDir(filepath.Join(filepath.Dir(file), "..", "..", "deploy", "templates"))
	require.NoError(t, err)
	for _, tpl := range ts {
		if tpl.Name == "pytorch-train" {
			v, errs := tpl.ParseValues(map[string]string{"gpus": "4"})
			require.Empty(t, errs)
			out, err := catalog.Render(&tpl, catalog.Target{Team: "vision", Namespace: "team-vision", CostCenter: "CC-1", Owner: "alice", LaunchID: "abcdefgh12", Queue: "default"}, v)
			require.NoError(t, err)
			return tpl, v, out
		}
	}
	t.Fatal("pytorch-train not seeded")
	return catalog.Template{}, catalog.Values{}, catalog.Rendered{}
}

func ceiling(gpus string) policy.Ceiling {
	return policy.Ceiling{"h100-sxm-ib-training": {
		"nvidia.com/gpu": resource.MustParse(gpus), corev1.ResourceCPU: resource.MustParse("192"), corev1.ResourceMemory: resource.MustParse("2Ti"),
	}}
}

func TestCheck(t *testing.T) {
	cases := map[string]struct {
		mutate   func(*batchv1.Job)
		ceiling  policy.Ceiling
		wantKey  string
		wantText string
	}{
		"seeded template is clean": {ceiling: ceiling("16")},
		"over the team's ceiling": {
			ceiling: ceiling("2"), wantKey: naming.FieldGPUs,
			wantText: "This asks for 4 GPUs on the h100-sxm-ib-training pool in total, but your team can use at most 2 there, even borrowing from other teams. Ask for less, or ask your team lead for more quota.",
		},
		"no quota on the pool": {
			ceiling: policy.Ceiling{}, wantKey: naming.FieldGPUType,
			wantText: "Your team has no quota on the h100-sxm-ib-training pool. Choose another GPU type or ask your team lead for quota.",
		},
		"privileged container": {
			mutate:   func(j *batchv1.Job) { j.Spec.Template.Spec.Containers[0].SecurityContext.Privileged = new(true) },
			wantKey:  `privileged:container "trainer" of the Job pytorch-train-abcdefgh12`,
			wantText: `The container "trainer" of the Job pytorch-train-abcdefgh12 may not run privileged.`,
		},
		"GPU limit differs from request": {
			mutate: func(j *batchv1.Job) {
				j.Spec.Template.Spec.Containers[0].Resources.Limits["nvidia.com/gpu"] = resource.MustParse("8")
			},
			wantKey: naming.FieldGPUs, wantText: `The container "trainer" of the Job pytorch-train-abcdefgh12 must request exactly as many nvidia.com/gpu as its limit.`,
		},
		"host network": {
			mutate:   func(j *batchv1.Job) { j.Spec.Template.Spec.HostNetwork = true },
			wantKey:  "host:Job pytorch-train-abcdefgh12",
			wantText: "The Job pytorch-train-abcdefgh12 may not share the node's network, process or IPC namespace.",
		},
		"hostPath volume": {
			mutate: func(j *batchv1.Job) {
				j.Spec.Template.Spec.Volumes = append(j.Spec.Template.Spec.Volumes, corev1.Volume{Name: "root", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}})
			},
			wantKey: "hostpath:Job pytorch-train-abcdefgh12", wantText: `The Job pytorch-train-abcdefgh12 may not mount a directory of the node (hostPath volume "root").`,
		},
		"missing labels on the pods": {
			mutate:   func(j *batchv1.Job) { delete(j.Spec.Template.Labels, naming.LabelQueueName) },
			wantKey:  "labels:Job pytorch-train-abcdefgh12's pods",
			wantText: "The Job pytorch-train-abcdefgh12's pods is missing the labels Gantry uses for queueing and cost: kueue.x-k8s.io/queue-name.",
		},
		"image off the allowlist": {
			mutate:   func(j *batchv1.Job) { j.Spec.Template.Spec.Containers[0].Image = "evil.example/miner:1.0" },
			wantKey:  "image:trainer",
			wantText: "The image evil.example/miner:1.0 is not from an allowed registry (allowed: nvcr.io, quay.io/jupyter, docker.io/vllm).",
		},
		"latest tag": {
			mutate:   func(j *batchv1.Job) { j.Spec.Template.Spec.Containers[0].Image = "nvcr.io/nvidia/pytorch:latest" },
			wantKey:  "image:trainer",
			wantText: `The image nvcr.io/nvidia/pytorch:latest must be pinned to a version tag or a digest, not "latest".`,
		},
		"cpu outside template bounds": {
			mutate: func(j *batchv1.Job) {
				j.Spec.Template.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("500")
			},
			wantKey: naming.FieldCPU, wantText: "The CPU request of 500 is outside the template's range of 1 to 96.",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tpl, v, out := training(t)
			if tc.mutate != nil {
				tc.mutate(out.Workload.(*batchv1.Job))
			}
			errs := rules.Check(launch.PolicyLaunch(&tpl, v, out), tc.ceiling)
			if tc.wantKey == "" {
				assert.Empty(t, errs)
				return
			}
			assert.Equal(t, tc.wantText, errs[tc.wantKey], "all: %v", errs)
		})
	}
}

func TestCheckImage(t *testing.T) {
	cases := map[string]struct{ image, want string }{
		"pinned tag":      {"nvcr.io/nvidia/pytorch:24.12-py3", ""},
		"digest":          {"docker.io/vllm/vllm-openai@sha256:0123", ""},
		"prefix boundary": {"docker.io/vllmx/evil:1", "The image docker.io/vllmx/evil:1 is not from an allowed registry (allowed: nvcr.io, quay.io/jupyter, docker.io/vllm)."},
		"no registry":     {"pytorch:2", "The image pytorch:2 does not name its registry; write it in full, like nvcr.io/nvidia/pytorch:24.12-py3."},
		"no tag":          {"nvcr.io/nvidia/pytorch", `The image nvcr.io/nvidia/pytorch must be pinned to a version tag or a digest, not "latest".`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tc.want, rules.CheckImage(tc.image))
		})
	}
}
