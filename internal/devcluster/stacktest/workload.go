package stacktest

import (
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/gantry-dev/gantry/internal/catalog"
	"github.com/gantry-dev/gantry/internal/naming"
)

// Test workloads in team namespaces must pass what the stack enforces there:
// Pod Security "restricted" and the admission policies of deploy/policies.

// Image is the allowlisted image, pinned to a tag, that test workloads run:
// the one of the seeded training template (kwok never pulls it).
const Image = "nvcr.io/nvidia/pytorch:24.12-py3"

// Priority is the WorkloadPriorityClass test workloads get unless a test
// sets kueue.x-k8s.io/priority-class itself: the lowest one.
const Priority = "batch"

// WorkloadLabels returns the labels deploy/policies/workload-labels.yaml
// requires on a workload of team (and on its pod template): owner
// "stacktest", the team's LocalQueue, priority Priority and pool "any"
// (Kueue picks the flavor). Change entries to suit the test.
func WorkloadLabels(team, name string, kind catalog.Kind) map[string]string {
	return map[string]string{
		naming.LabelTeam:            team,
		naming.LabelOwner:           "stacktest",
		naming.LabelTemplate:        "stacktest",
		naming.LabelTemplateVersion: "1",
		naming.LabelKind:            string(kind),
		naming.LabelPool:            "any",
		naming.LabelCostCenter:      "CC-TEST",
		naming.LabelQueueName:       naming.LocalQueue,
		naming.LabelPriorityClass:   Priority,
		naming.LabelManagedBy:       naming.ManagedBy,
		naming.LabelAppName:         "stacktest",
		naming.LabelInstance:        name,
		naming.LabelComponent:       string(kind),
		naming.LabelPartOf:          "gantry",
	}
}

// OwnedBy labels a workload of WorkloadLabels, and its pod template, as
// owned by the IdP username user: a person (an "oidc:" identity) may only
// create workloads they own (deploy/policies/workload-labels.yaml).
func OwnedBy(job *batchv1.Job, user string) *batchv1.Job {
	job.Labels[naming.LabelOwner] = naming.OwnerLabel(user)
	job.Spec.Template.Labels[naming.LabelOwner] = naming.OwnerLabel(user)
	return job
}

// OnPool pins job's pods to the GPU nodes of pool, as a template with a
// pool does: a node selector on the pool label and catalog.GPUToleration.
func OnPool(job *batchv1.Job, pool string) *batchv1.Job {
	job.Spec.Template.Spec.NodeSelector = map[string]string{naming.LabelPool: pool}
	job.Spec.Template.Spec.Tolerations = []corev1.Toleration{catalog.GPUToleration()}
	return job
}

// RestrictedPodSpec returns a pod spec of one container "main" running
// Image that Pod Security "restricted" and the pod policy accept: non-root,
// RuntimeDefault seccomp, no privilege escalation, all capabilities
// dropped, and GPU (nvidia.com/*) limits equal to the requests.
func RestrictedPodSpec(requests corev1.ResourceList) corev1.PodSpec {
	limits := corev1.ResourceList{}
	for n, q := range requests {
		if strings.HasPrefix(string(n), "nvidia.com/") {
			limits[n] = q
		}
	}
	return corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever,
		SecurityContext: &corev1.PodSecurityContext{
			RunAsNonRoot:   ptr.To(true),
			RunAsUser:      ptr.To[int64](1000),
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		Containers: []corev1.Container{{
			Name:      "main",
			Image:     Image,
			Resources: corev1.ResourceRequirements{Requests: requests, Limits: limits},
			SecurityContext: &corev1.SecurityContext{
				AllowPrivilegeEscalation: ptr.To(false),
				Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			},
		}},
	}
}

// CompliantJob returns a suspended training Job in team's namespace, queued
// to its LocalQueue (Kueue unsuspends it on admission), with WorkloadLabels
// on the Job and its pod template and a RestrictedPodSpec.
func CompliantJob(team, name string, requests corev1.ResourceList) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: naming.Namespace(team),
			Labels: WorkloadLabels(team, name, catalog.KindTraining)},
		Spec: batchv1.JobSpec{
			Suspend:      ptr.To(true),
			BackoffLimit: ptr.To[int32](0),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: WorkloadLabels(team, name, catalog.KindTraining)},
				Spec:       RestrictedPodSpec(requests),
			},
		},
	}
}
