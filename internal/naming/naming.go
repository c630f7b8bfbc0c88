// Package naming is the one home of the names, labels and annotations
// Gantry defines: the team namespace and queue rule, object names, and
// every label and annotation key Gantry writes or reads on cluster
// objects. No other package spells them; deploy/ YAML repeats them as data
// and a test checks it agrees.
package naming

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// teamPrefix starts the name of every team namespace and ClusterQueue.
const teamPrefix = "team-"

// Namespace is the namespace of the named team (team-<name>).
func Namespace(team string) string { return teamPrefix + team }

// TeamOfNamespace is the team a namespace belongs to, and false when the
// namespace is not a team namespace.
func TeamOfNamespace(namespace string) (string, bool) {
	team, ok := strings.CutPrefix(namespace, teamPrefix)
	if !ok || team == "" {
		return "", false
	}
	return team, true
}

// ClusterQueue is the Kueue ClusterQueue of the named team (team-<name>).
func ClusterQueue(team string) string { return teamPrefix + team }

// LocalQueue is the Kueue LocalQueue in every team namespace, the queue
// users submit to.
const LocalQueue = "default"

// Label keys every Gantry object and pod template carries.
const (
	// LabelTeam names the team on its namespace, queues and workloads;
	// admission policies and ClusterQueue namespace selectors match it.
	LabelTeam            = "gantry.dev/team"
	LabelOwner           = "gantry.dev/owner"
	LabelTemplate        = "gantry.dev/template"
	LabelTemplateVersion = "gantry.dev/template-version"
	LabelKind            = "gantry.dev/kind"
	// LabelPool names the node pool (= Kueue ResourceFlavor) on nodes and
	// in workloads' node selectors.
	LabelPool       = "gantry.dev/pool"
	LabelCostCenter = "gantry.dev/cost-center"
	LabelLaunchID   = "gantry.dev/launch-id"

	// Kueue's labels as Gantry sets them.
	LabelQueueName     = "kueue.x-k8s.io/queue-name"
	LabelPriorityClass = "kueue.x-k8s.io/priority-class"

	// Kubernetes recommended labels.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	LabelAppName   = "app.kubernetes.io/name"
	LabelInstance  = "app.kubernetes.io/instance"
	LabelComponent = "app.kubernetes.io/component"
	LabelPartOf    = "app.kubernetes.io/part-of"
	LabelVersion   = "app.kubernetes.io/version"
)

// SharedLabels are the keys every object Gantry renders, and its pod
// template, must carry; policy checks them.
func SharedLabels() []string {
	return []string{
		LabelTeam, LabelOwner, LabelTemplate, LabelTemplateVersion, LabelKind, LabelPool, LabelCostCenter,
		LabelQueueName, LabelPriorityClass, LabelManagedBy, LabelAppName, LabelInstance, LabelComponent, LabelPartOf,
	}
}

// ManagedBy is the value of LabelManagedBy on Gantry's objects; PartOf the
// value of LabelPartOf on them and on the portal's pods.
const (
	ManagedBy = "gantry"
	PartOf    = "gantry"
)

// Annotation keys.
const (
	// AnnotationDisplayName and AnnotationCostCenter carry portal facts on a
	// team namespace.
	AnnotationDisplayName = "gantry.dev/display-name"
	AnnotationCostCenter  = LabelCostCenter
	// AnnotationParameters records the launch parameters on the workload object.
	AnnotationParameters = "gantry.dev/parameters"
	// AnnotationQuotaGrantPrefix starts the ClusterQueue annotation of each
	// applied temporary quota grant (quota.gantry.dev/grant-<id>).
	AnnotationQuotaGrantPrefix = "quota.gantry.dev/grant-"
	// AnnotationIdleEpisode is the idle episode whose stop or scale-down
	// was last applied to a notebook's StatefulSet or an endpoint's
	// Deployment, written in the same update as its replicas.
	AnnotationIdleEpisode = "gantry.dev/idle-episode"
)

// Annotations the local stack's kwok stages and metric read from pods and
// nodes (deploy/local/kwok): how a simulated pod or node behaves.
const (
	// AnnotationSimulateDuration is how long a Job pod runs before it ends.
	AnnotationSimulateDuration = "gantry.dev/simulate-duration"
	// AnnotationSimulateExitCode makes the pod fail with this exit code.
	AnnotationSimulateExitCode = "gantry.dev/simulate-exit-code"
	// AnnotationSimulateReason is the failed container's reason (OOMKilled).
	AnnotationSimulateReason = "gantry.dev/simulate-reason"
	// AnnotationSimulateImagePullError makes the image pull fail with this message.
	AnnotationSimulateImagePullError = "gantry.dev/simulate-image-pull-error"
	// AnnotationSimulateNodeNotReady, on a simulated node, makes its kubelet
	// report the node NotReady with this message (its runtime is down).
	AnnotationSimulateNodeNotReady = "gantry.dev/simulate-node-not-ready"
	// AnnotationSimGPUUtil forces a simulated pod's GPU utilization
	// (percent, 0-100); it means nothing on a real cluster.
	AnnotationSimGPUUtil = "sim.gantry.dev/gpu-util"
	// AnnotationSimulateUtilization is the older spelling of
	// AnnotationSimGPUUtil, still honoured for existing tests.
	AnnotationSimulateUtilization = "gantry.dev/simulate-utilization"
)

// Names of a team's cluster objects and of Gantry's cluster-wide objects.
const (
	// ResearcherRole and TeamLeadRole are the ClusterRoles a team's member
	// and lead IdP groups are bound to in its namespace.
	ResearcherRole = "gantry-researcher"
	TeamLeadRole   = "gantry-team-lead"
	// AdminRole is the ClusterRole the admin groups are bound to in every
	// team namespace (and nowhere else).
	AdminRole = "gantry-admin"
	// ResearcherBinding, TeamLeadBinding and AdminBinding are the
	// RoleBindings of those roles in a team namespace.
	ResearcherBinding = "gantry-researchers"
	TeamLeadBinding   = "gantry-team-leads"
	AdminBinding      = "gantry-admins"
	// NetworkPolicy is the team namespace's ingress policy.
	NetworkPolicy = "gantry-team-ingress"
	// ResourceQuota is the team namespace's accelerator quota.
	ResourceQuota = "gantry-accelerators"
	// SystemNamespace is the default namespace of the portal's pods and
	// cluster-wide objects.
	SystemNamespace = "gantry-system"
	// AllowlistConfigMap holds the image allowlist the admission policy
	// reads, one registry a line under AllowlistKey.
	AllowlistConfigMap = "gantry-image-allowlist"
	AllowlistKey       = "registries"
	// FieldManager is the portal's server-side apply and create field manager.
	FieldManager = "gantry"
)

// Object is the deterministic name of a launch's objects.
func Object(template, launchID string) string {
	return template + "-" + launchID
}

var labelUnsafe = regexp.MustCompile(`[^a-z0-9._-]+`)

// OwnerLabel turns a username into a label value: unchanged when it is one
// already, else lowercased with other characters replaced and a short hash
// of the original appended, so different usernames stay different.
func OwnerLabel(username string) string {
	if len(validation.IsValidLabelValue(username)) == 0 && username != "" {
		return username
	}
	sum := sha256.Sum256([]byte(username))
	base := strings.Trim(labelUnsafe.ReplaceAllString(strings.ToLower(username), "-"), "-._")
	if len(base) > 54 {
		base = strings.Trim(base[:54], "-._")
	}
	if base == "" {
		return "u" + hex.EncodeToString(sum[:4])
	}
	return base + "-" + hex.EncodeToString(sum[:4])
}

// Field names of the launch form, shared by the form, its JSON API twin,
// the template catalog that parses them and the policy rules whose
// violations point at them.
const (
	FieldTeam            = "team"
	FieldGPUType         = "gpuType"
	FieldGPUs            = "gpus"
	FieldCPU             = "cpu"
	FieldMemory          = "memory"
	FieldReplicas        = "replicas"
	FieldNodes           = "nodes"
	FieldDurationMinutes = "durationMinutes"
	FieldArgs            = "args"
	FieldModel           = "model"
	FieldDataset         = "dataset"
	FieldCheckpoint      = "checkpoint"
)
