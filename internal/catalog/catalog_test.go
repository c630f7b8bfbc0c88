package catalog_test

import (
	"path/filepath"
	"runtime"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/gantry-dev/gantry/internal/catalog"
	"github.com/gantry-dev/gantry/internal/naming"
)

func seeded(t testing.TB) map[string]catalog.Template {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	ts, err := catalog.LoadDir(filepath.Join(filepath.Dir(file), "..", "..", "deploy", "templates"))
	require.NoError(t, err)
	out := map[string]catalog.Template{}
	for _, tpl := range ts {
		tpl.Version = 1
		out[tpl.Name] = tpl
	}
	return out
}

func target() catalog.Target {
	return catalog.Target{Team: "vision", Namespace: "team-vision", CostCenter: "CC-1001", Owner: "alice", LaunchID: "abc123def4", Queue: "default"}
}

func TestSeededTemplatesRender(t *testing.T) {
	ts := seeded(t)
	cases := map[string]struct {
		template     string
		values       map[string]string
		wantKinds    []string
		wantPool     string
		wantPods     int
		wantResource string
	}{
		"notebook on a MIG slice": {
			template: "jupyter-pytorch", wantKinds: []string{"Service", "StatefulSet"},
			wantPool: "a100-mig-shared", wantPods: 1, wantResource: "nvidia.com/mig-1g.10gb",
		},
		"notebook on a whole GPU": {
			template: "jupyter-pytorch", values: map[string]string{"gpuType": "l40s"}, wantKinds: []string{"Service", "StatefulSet"},
			wantPool: "l40s-pcie-inference", wantPods: 1, wantResource: "nvidia.com/gpu",
		},
		"single-node training": {
			template: "pytorch-train", wantKinds: []string{"Job"}, wantPool: "h100-sxm-ib-training", wantPods: 1, wantResource: "nvidia.com/gpu",
		},
		"multi-node training": {
			template: "pytorch-multinode", values: map[string]string{"nodes": "3"}, wantKinds: []string{"Service", "Job"},
			wantPool: "h100-sxm-ib-training", wantPods: 3, wantResource: "nvidia.com/gpu",
		},
		"inference": {
			template: "vllm-inference", values: map[string]string{"replicas": "2"}, wantKinds: []string{"Service", "Deployment"},
			wantPool: "l40s-pcie-inference", wantPods: 2, wantResource: "nvidia.com/gpu",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tpl := ts[tc.template]
			v, errs := tpl.ParseValues(tc.values)
			require.Empty(t, errs)
			out, err := catalog.Render(&tpl, target(), v)
			require.NoError(t, err)
			var kinds []string
			for _, o := range out.Objects {
				kinds = append(kinds, o.GetObjectKind().GroupVersionKind().Kind)
				assert.Equal(t, tc.template+"-abc123def4", o.GetName())
				assert.Equal(t, "alice", o.GetLabels()[naming.LabelOwner])
				assert.Equal(t, "default", o.GetLabels()[naming.LabelQueueName])
				assert.Equal(t, tc.wantPool, o.GetLabels()[naming.LabelPool])
			}
			assert.Equal(t, tc.wantKinds, kinds)
			assert.Equal(t, tc.wantPool, out.Pool)
			assert.Equal(t, tc.wantPods, out.Pods)
			assert.Equal(t, tc.wantResource, out.GPUResource)
		})
	}
}

// jobBuilder builds the expected Job of the single-node training template.
type jobBuilder struct{ job *batchv1.Job }

func expectJob(labels map[string]string) *jobBuilder {
	return &jobBuilder{job: &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{Name: "pytorch-train-abc123def4", Namespace: "team-vision", Labels: labels},
	}}
}

func (b *jobBuilder) gpus(n int64) *jobBuilder {
	q := *resource.NewQuantity(n, resource.DecimalSI)
	b.job.Spec.Template.Spec.Containers[0].Resources.Requests["nvidia.com/gpu"] = q
	b.job.Spec.Template.Spec.Containers[0].Resources.Limits["nvidia.com/gpu"] = q
	return b
}

func TestRenderTrainingJob(t *testing.T) {
	tpl := seeded(t)["pytorch-train"]
	v, errs := tpl.ParseValues(map[string]string{"gpus": "4", "durationMinutes": "30", "args": "train.py --lr 0.1"})
	require.Empty(t, errs)
	out, err := catalog.Render(&tpl, target(), v)
	require.NoError(t, err)
	job := out.Workload.(*batchv1.Job)

	labels := map[string]string{
		"gantry.dev/team": "vision", "gantry.dev/owner": "alice", "gantry.dev/template": "pytorch-train",
		"gantry.dev/template-version": "1", "gantry.dev/kind": "training", "gantry.dev/pool": "h100-sxm-ib-training",
		"gantry.dev/cost-center": "CC-1001", "gantry.dev/launch-id": "abc123def4",
		"kueue.x-k8s.io/queue-name": "default", "kueue.x-k8s.io/priority-class": "training",
		"app.kubernetes.io/managed-by": "gantry", "app.kubernetes.io/name": "pytorch-train",
		"app.kubernetes.io/instance": "pytorch-train-abc123def4", "app.kubernetes.io/component": "trainer",
		"app.kubernetes.io/part-of": "gantry",
	}
	want := expectJob(labels)
	want.job.Spec = batchv1.JobSpec{
		Parallelism: new(int32(1)), Completions: new(int32(1)), BackoffLimit: new(int32(0)), Suspend: new(true),
		ActiveDeadlineSeconds: new(int64(1800)),
		Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: map[string]string{"gantry.dev/simulate-duration": "20s"}},
			Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{
					Name: "trainer", Image: "nvcr.io/nvidia/pytorch:24.12-py3",
					Command: []string{"torchrun", "--standalone", "--nproc-per-node=gpu"},
					Args:    []string{"train.py", "--lr", "0.1"},
					Env: []corev1.EnvVar{
						{Name: "GANTRY_TEAM", Value: "vision"}, {Name: "GANTRY_JOB", Value: "pytorch-train-abc123def4"},
						{Name: "GANTRY_DATASET", Value: "s3://datasets/imagenet-1k"}, {Name: "GANTRY_CHECKPOINT_DIR", Value: "s3://checkpoints/"},
					},
					Resources: corev1.ResourceRequirements{
						Requests: corev1.ResourceList{"cpu": resource.MustParse("8"), "memory": resource.MustParse("64Gi")},
						Limits:   corev1.ResourceList{"memory": resource.MustParse("64Gi")},
					},
					SecurityContext: &corev1.SecurityContext{
						AllowPrivilegeEscalation: new(false), RunAsNonRoot: new(true),
						Capabilities:   &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
				}},
				NodeSelector:                 map[string]string{"gantry.dev/pool": "h100-sxm-ib-training"},
				Tolerations:                  []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
				AutomountServiceAccountToken: new(false),
				SecurityContext: &corev1.PodSecurityContext{
					RunAsNonRoot: new(true), RunAsUser: new(int64(1000)), RunAsGroup: new(int64(1000)), FSGroup: new(int64(1000)),
					SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
				},
			},
		},
	}
	want.gpus(4)
	if diff := cmp.Diff(want.job, job); diff != "" {
		t.Errorf("job (-want +got):\n%s", diff)
	}
}

func TestRenderMultiNodeIsGangIndexedJob(t *testing.T) {
	tpl := seeded(t)["pytorch-multinode"]
	v, errs := tpl.ParseValues(map[string]string{"nodes": "2", "gpus": "8"})
	require.Empty(t, errs)
	out, err := catalog.Render(&tpl, target(), v)
	require.NoError(t, err)
	svc := out.Objects[0].(*corev1.Service)
	wantSvc := corev1.ServiceSpec{
		ClusterIP: corev1.ClusterIPNone, PublishNotReadyAddresses: true,
		Selector: map[string]string{"app.kubernetes.io/instance": "pytorch-multinode-abc123def4", "app.kubernetes.io/managed-by": "gantry"},
		Ports:    []corev1.ServicePort{{Name: "rendezvous", Port: 29500, TargetPort: intstr.FromInt32(29500)}},
	}
	if diff := cmp.Diff(wantSvc, svc.Spec); diff != "" {
		t.Errorf("service (-want +got):\n%s", diff)
	}
	job := out.Workload.(*batchv1.Job)
	assert.Equal(t, int32(2), *job.Spec.Parallelism)
	assert.Equal(t, int32(2), *job.Spec.Completions, "completions = parallelism for Kueue's all-or-nothing admission")
	assert.Equal(t, batchv1.IndexedCompletion, *job.Spec.CompletionMode)
	assert.Equal(t, svc.Name, job.Spec.Template.Spec.Subdomain)
}

func TestRenderNotebookWorkspace(t *testing.T) {
	tpl := seeded(t)["jupyter-pytorch"]
	v, errs := tpl.ParseValues(nil)
	require.Empty(t, errs)
	cases := map[string]struct {
		storageClass  string
		wantClaims    int
		wantEmptyDirs int
	}{
		"no storage class: emptyDir":           {wantEmptyDirs: 1},
		"storage class: claim survives a stop": {storageClass: "fast", wantClaims: 1},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ws := *tpl.Workspace
			ws.StorageClass = tc.storageClass
			tpl.Workspace = &ws
			out, err := catalog.Render(&tpl, target(), v)
			require.NoError(t, err)
			sts := out.Workload.(*appsv1.StatefulSet)
			assert.Len(t, sts.Spec.VolumeClaimTemplates, tc.wantClaims)
			assert.Len(t, sts.Spec.Template.Spec.Volumes, tc.wantEmptyDirs)
			if tc.wantClaims > 0 {
				assert.Equal(t, appsv1.RetainPersistentVolumeClaimRetentionPolicyType, sts.Spec.PersistentVolumeClaimRetentionPolicy.WhenScaled)
			}
			assert.Equal(t, int32(1), *sts.Spec.Replicas)
		})
	}
}

func TestParseValuesErrorsAreSentences(t *testing.T) {
	tpl := seeded(t)["pytorch-train"]
	cases := map[string]struct {
		values    map[string]string
		wantField string
		wantText  string
	}{
		"too many GPUs":      {map[string]string{"gpus": "16"}, "gpus", "This template allows the number of GPUs from 1 to 8; you asked for 16."},
		"GPUs not a number":  {map[string]string{"gpus": "lots"}, "gpus", "Enter the number of GPUs as a whole number, for example 1."},
		"unknown GPU type":   {map[string]string{"gpuType": "tpu"}, "gpuType", "Choose one of the GPU types this template offers: H100 80 GB SXM, L40S 48 GB."},
		"memory over bound":  {map[string]string{"memory": "2Ti"}, "memory", "This template allows memory from 8Gi to 1Ti; you asked for 2Ti."},
		"cpu garbage":        {map[string]string{"cpu": "fast"}, "cpu", "Enter CPU cores as a number like 8."},
		"unknown dataset":    {map[string]string{"dataset": "secret"}, "dataset", "Choose a dataset from the list: ImageNet-1k, C4 (English)."},
		"time limit too big": {map[string]string{"durationMinutes": "99999"}, "durationMinutes", "This template allows the time limit in minutes from 1 to 4320; you asked for 99999."},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, errs := tpl.ParseValues(tc.values)
			assert.Equal(t, tc.wantText, errs[tc.wantField])
		})
	}
}

func TestMarshalRoundTrip(t *testing.T) {
	for name, tpl := range seeded(t) {
		t.Run(name, func(t *testing.T) {
			data, err := catalog.Marshal(tpl)
			require.NoError(t, err)
			back, err := catalog.Parse(data)
			require.NoError(t, err)
			tpl.Version = 0
			if diff := cmp.Diff(tpl, back); diff != "" {
				t.Errorf("round trip (-want +got):\n%s", diff)
			}
		})
	}
}

// A template cannot queue its workloads above its kind's priority: the
// cluster would refuse them at launch (deploy/policies/workload-labels.yaml).
func TestTemplatePriorityFollowsItsKind(t *testing.T) {
	cases := map[string]struct {
		priority string
		wantErr  string
	}{
		"kind's default":   {},
		"its own class":    {priority: "training"},
		"lowered to batch": {priority: "batch"},
		"above its kind": {priority: "inference",
			wantErr: `priority class "inference" is not one a training template may use (training or batch)`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tpl := seeded(t)["pytorch-train"]
			tpl.PriorityClass = tc.priority
			err := tpl.Validate()
			if tc.wantErr == "" {
				require.NoError(t, err)
				return
			}
			assert.ErrorContains(t, err, tc.wantErr)
		})
	}
}
