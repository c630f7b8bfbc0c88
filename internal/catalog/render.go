package catalog

import (
	"fmt"
	"regexp"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/gantry-dev/gantry/internal/naming"
)

// Object is a Kubernetes object with metadata.
type Object interface {
	metav1.Object
	runtime.Object
}

// Target is where and for whom a template is rendered.
type Target struct {
	Team       string
	Namespace  string
	CostCenter string
	// Owner is the launching user's username; it is sanitised into a label value.
	Owner string
	// LaunchID is the launch's idempotency key; object names derive from it.
	LaunchID string
	// Queue is the team's Kueue LocalQueue.
	Queue string
}

// Rendered is a launch's Kubernetes objects, in creation order, and the
// name they share.
type Rendered struct {
	Name      string
	Namespace string
	// Workload is the Job, StatefulSet or Deployment.
	Workload Object
	// Objects are all objects, Service first, the workload last.
	Objects []Object
	// PodsPerReplica is how many pods the workload runs at once at full size.
	Pods int
	// Pool is the node pool the pods run on.
	Pool string
	// GPUResource and GPUsPerPod describe each pod's accelerator request.
	GPUResource string
	GPUsPerPod  int
}

var launchIDPattern = regexp.MustCompile(`^[a-z0-9]{8,20}$`)

// NotebookBaseURL is the path a notebook opens at through the portal's
// proxy, and so the base URL its server is started with.
func NotebookBaseURL(team, name string) string {
	return "/teams/" + team + "/jobs/" + name + "/open/"
}

// ValidLaunchID reports whether id can be a launch id.
func ValidLaunchID(id string) bool { return launchIDPattern.MatchString(id) }

// Render builds the template's objects for the target with parsed values.
// It is pure: the same inputs give the same objects.
func Render(t *Template, target Target, v Values) (Rendered, error) {
	if !ValidLaunchID(target.LaunchID) {
		return Rendered{}, fmt.Errorf("render %s: launch id %q is not 8-20 lowercase letters and digits", t.Name, target.LaunchID)
	}
	gpu, ok := t.GPUType(v.GPUType)
	if !ok {
		return Rendered{}, fmt.Errorf("render %s: unknown GPU type %q", t.Name, v.GPUType)
	}
	name := naming.Object(t.Name, target.LaunchID)
	r := renderer{t: t, target: target, v: v, gpu: gpu, name: name}
	out := Rendered{Name: name, Namespace: target.Namespace, Pool: gpu.Pool, GPUResource: gpu.Resource, GPUsPerPod: v.GPUs, Pods: 1}
	switch t.Kind {
	case KindNotebook:
		out.Workload = r.notebook()
		out.Objects = []Object{r.service(false), out.Workload}
	case KindTraining:
		out.Workload = r.job()
		if t.MultiNode {
			out.Pods = v.Nodes
			out.Objects = []Object{r.service(true), out.Workload}
		} else {
			out.Objects = []Object{out.Workload}
		}
	case KindInference:
		out.Workload = r.deployment()
		out.Pods = v.Replicas
		out.Objects = []Object{r.service(false), out.Workload}
	default:
		return Rendered{}, fmt.Errorf("render %s: unknown kind %q", t.Name, t.Kind)
	}
	return out, nil
}

type renderer struct {
	t      *Template
	target Target
	v      Values
	gpu    GPUType
	name   string
}

func (r renderer) component() string {
	switch r.t.Kind {
	case KindNotebook:
		return "notebook"
	case KindInference:
		return "endpoint"
	default:
		return "trainer"
	}
}

// Labels returns the shared labels of the launch's objects.
func (r renderer) labels() map[string]string {
	return map[string]string{
		naming.LabelTeam:            r.target.Team,
		naming.LabelOwner:           naming.OwnerLabel(r.target.Owner),
		naming.LabelTemplate:        r.t.Name,
		naming.LabelTemplateVersion: strconv.Itoa(r.t.Version),
		naming.LabelKind:            string(r.t.Kind),
		naming.LabelPool:            r.gpu.Pool,
		naming.LabelCostCenter:      costCenterLabel(r.target.CostCenter),
		naming.LabelLaunchID:        r.target.LaunchID,
		naming.LabelQueueName:       r.target.Queue,
		naming.LabelPriorityClass:   r.t.Priority(),
		naming.LabelManagedBy:       naming.ManagedBy,
		naming.LabelAppName:         r.t.Name,
		naming.LabelInstance:        r.name,
		naming.LabelComponent:       r.component(),
		naming.LabelPartOf:          naming.PartOf,
	}
}

func costCenterLabel(cc string) string {
	if cc == "" {
		return "none"
	}
	return naming.OwnerLabel(cc)
}

func (r renderer) meta() metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: r.name, Namespace: r.target.Namespace, Labels: r.labels()}
}

func (r renderer) selector() map[string]string {
	return map[string]string{naming.LabelInstance: r.name, naming.LabelManagedBy: naming.ManagedBy}
}

func (r renderer) service(headless bool) *corev1.Service {
	svc := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: r.meta(),
		Spec:       corev1.ServiceSpec{Selector: r.selector()},
	}
	if headless {
		svc.Spec.ClusterIP = corev1.ClusterIPNone
		svc.Spec.PublishNotReadyAddresses = true
		svc.Spec.Ports = []corev1.ServicePort{{Name: "rendezvous", Port: 29500, TargetPort: intstr.FromInt32(29500)}}
		return svc
	}
	svc.Spec.Ports = []corev1.ServicePort{{Name: "http", Port: r.t.Port, TargetPort: intstr.FromInt32(r.t.Port)}}
	return svc
}

func (r renderer) podTemplate() corev1.PodTemplateSpec {
	gpus := *resource.NewQuantity(int64(r.v.GPUs), resource.DecimalSI)
	res := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: r.v.CPU, corev1.ResourceMemory: r.v.Memory, corev1.ResourceName(r.gpu.Resource): gpus},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: r.v.Memory, corev1.ResourceName(r.gpu.Resource): gpus},
	}
	env := []corev1.EnvVar{
		{Name: "GANTRY_TEAM", Value: r.target.Team},
		{Name: "GANTRY_JOB", Value: r.name},
	}
	for _, c := range []struct {
		name, value string
		choices     []Choice
	}{
		{"GANTRY_MODEL", r.v.Model, r.t.Parameters.Models},
		{"GANTRY_DATASET", r.v.Dataset, r.t.Parameters.Datasets},
		{"GANTRY_CHECKPOINT_DIR", r.v.Checkpoint, r.t.Parameters.Checkpoints},
	} {
		for _, ch := range c.choices {
			if ch.Name == c.value && ch.URI != "" {
				env = append(env, corev1.EnvVar{Name: c.name, Value: ch.URI})
			}
		}
	}
	if r.t.MultiNode {
		env = append(env,
			corev1.EnvVar{Name: "MASTER_ADDR", Value: r.name + "-0." + r.name},
			corev1.EnvVar{Name: "MASTER_PORT", Value: "29500"},
			corev1.EnvVar{Name: "NNODES", Value: strconv.Itoa(r.v.Nodes)},
			corev1.EnvVar{Name: "NPROC_PER_NODE", Value: strconv.Itoa(r.v.GPUs)},
			corev1.EnvVar{Name: "NODE_RANK", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{
				FieldPath: "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}},
		)
	}
	container := corev1.Container{
		Name:      r.component(),
		Image:     r.t.Image,
		Command:   r.t.Command,
		Args:      r.v.Args,
		Env:       env,
		Resources: res,
		SecurityContext: &corev1.SecurityContext{
			AllowPrivilegeEscalation: new(false),
			RunAsNonRoot:             new(true),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
	}
	mergeSecurityContext(container.SecurityContext, r.t.SecurityContext)
	if r.t.Kind == KindNotebook {
		// The portal's proxy passes paths through unchanged: the server
		// must serve under the path it is opened at.
		base := NotebookBaseURL(r.target.Team, r.name)
		container.Env = append(container.Env, corev1.EnvVar{Name: "GANTRY_BASE_URL", Value: base})
		if r.t.BaseURLArg != "" {
			container.Args = append(append([]string(nil), container.Args...), r.t.BaseURLArg+"="+base)
		}
	}
	if r.t.Port != 0 {
		container.Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: r.t.Port}}
	}
	labels := r.labels()
	pod := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{
			Containers:                   []corev1.Container{container},
			NodeSelector:                 map[string]string{naming.LabelPool: r.gpu.Pool},
			Tolerations:                  []corev1.Toleration{GPUToleration()},
			AutomountServiceAccountToken: new(false),
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot:   new(true),
				RunAsUser:      new(int64(1000)),
				RunAsGroup:     new(int64(1000)),
				FSGroup:        new(int64(1000)),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
		},
	}
	if r.t.SimulateDuration != "" && r.t.Kind == KindTraining {
		pod.Annotations = map[string]string{naming.AnnotationSimulateDuration: r.t.SimulateDuration}
	}
	return pod
}

func (r renderer) job() *batchv1.Job {
	pod := r.podTemplate()
	pod.Spec.RestartPolicy = corev1.RestartPolicyNever
	n := int32(max(r.v.Nodes, 1))
	job := &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: r.meta(),
		Spec: batchv1.JobSpec{
			Parallelism:  new(n),
			Completions:  new(n),
			BackoffLimit: new(max(r.t.PodRetries, 0)),
			// Kueue admits the Job suspended and unsuspends it when quota is reserved.
			Suspend:  new(true),
			Template: pod,
		},
	}
	if r.v.DurationMinutes > 0 {
		job.Spec.ActiveDeadlineSeconds = new(int64(r.v.DurationMinutes) * 60)
	}
	if r.t.MultiNode {
		job.Spec.CompletionMode = new(batchv1.IndexedCompletion)
		job.Spec.Template.Spec.Subdomain = r.name
	}
	return job
}

func (r renderer) notebook() *appsv1.StatefulSet {
	pod := r.podTemplate()
	ws := r.t.Workspace
	c := &pod.Spec.Containers[0]
	c.VolumeMounts = []corev1.VolumeMount{{Name: "workspace", MountPath: ws.MountPath}}
	size := resource.MustParse(ws.Size)
	sts := &appsv1.StatefulSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"},
		ObjectMeta: r.meta(),
		Spec: appsv1.StatefulSetSpec{
			Replicas:    new(int32(1)),
			ServiceName: r.name,
			Selector:    &metav1.LabelSelector{MatchLabels: r.selector()},
			Template:    pod,
		},
	}
	if ws.StorageClass == "" {
		sts.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "workspace", VolumeSource: corev1.VolumeSource{
			EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: &size}}}}
		return sts
	}
	sts.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{
		ObjectMeta: metav1.ObjectMeta{Name: "workspace", Labels: r.labels()},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: new(ws.StorageClass),
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}},
		},
	}}
	// Stopping scales to zero; the claim must outlive that.
	sts.Spec.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
		WhenScaled:  appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
		WhenDeleted: appsv1.DeletePersistentVolumeClaimRetentionPolicyType,
	}
	return sts
}

func (r renderer) deployment() *appsv1.Deployment {
	pod := r.podTemplate()
	pod.Spec.Containers[0].ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
		HTTPGet: &corev1.HTTPGetAction{Path: "/health", Port: intstr.FromInt32(r.t.Port)}}}
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: r.meta(),
		Spec: appsv1.DeploymentSpec{
			Replicas: new(int32(r.v.Replicas)),
			Selector: &metav1.LabelSelector{MatchLabels: r.selector()},
			Template: pod,
		},
	}
}

// GPUToleration tolerates the taint GPU nodes carry (nvidia.com/gpu,
// NoSchedule, as the NVIDIA GPU Operator and the local stack set it): every
// rendered pod has it, and the pool's node selector decides where it runs.
func GPUToleration() corev1.Toleration {
	return corev1.Toleration{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}
}
