// Package catalog is Gantry's template model: what a template offers, how a
// researcher's form values are parsed against its parameter schema, and how
// a template renders to Kubernetes objects. Everything here is pure code.
package catalog

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"
)

// Kind is the kind of workload a template launches.
type Kind string

// Workload kinds.
const (
	KindNotebook  Kind = "notebook"
	KindTraining  Kind = "training"
	KindInference Kind = "inference"
)

// PriorityBatch is the lowest WorkloadPriorityClass, first to be preempted.
const PriorityBatch = "batch"

// Priorities are the WorkloadPriorityClasses a workload of the kind may run
// at: the kind's own (classes are named after kinds) or batch. The
// cluster's gantry-workload-labels policy holds people to the same.
func (k Kind) Priorities() []string { return []string{string(k), PriorityBatch} }

// Template is one version of a launchable workload definition. Its YAML form
// (sigs.k8s.io/yaml, JSON field names) is the file format of deploy/templates
// and of template import/export.
type Template struct {
	// Name identifies the template across versions; lowercase letters,
	// digits and dashes, starting with a letter, at most 24 characters.
	Name string `json:"name"`
	// Version is assigned by the store; files leave it out.
	Version     int    `json:"version,omitempty"`
	Kind        Kind   `json:"kind"`
	Title       string `json:"title"`
	Description string `json:"description,omitempty"`
	// Image is the container image: registry/repository:tag (no "latest") or @sha256 digest.
	Image string `json:"image"`
	// Teams that may use the template; empty means every team.
	Teams []string `json:"teams,omitempty"`
	// GPUTypes are the accelerators a researcher may choose from; the first is the default.
	GPUTypes []GPUType `json:"gpuTypes"`
	// SecurityContext is merged over Gantry's restricted container security
	// settings; policy refuses any that weaken them (privileged, root, ...).
	SecurityContext *corev1.SecurityContext `json:"securityContext,omitempty"`
	// Command is the container entrypoint; Parameters.Args holds its editable arguments.
	Command []string `json:"command,omitempty"`
	// Port is the port the notebook or endpoint listens on.
	Port int32 `json:"port,omitempty"`
	// BaseURLArg is a notebook server's flag for its base URL (Jupyter's
	// --ServerApp.base_url): rendering appends <flag>=<NotebookBaseURL> so
	// links inside it work behind the portal's proxy. Every notebook also
	// gets the path as GANTRY_BASE_URL.
	BaseURLArg string `json:"baseURLArg,omitempty"`
	// MultiNode makes a training template an Indexed Job with a headless Service.
	MultiNode bool `json:"multiNode,omitempty"`
	// PodRetries is how many failed or lost pods a training Job survives
	// (its backoffLimit): a distributed run that restarts a lost pod from its
	// checkpoint needs at least one. Zero fails the Job on the first.
	PodRetries int32 `json:"podRetries,omitempty"`
	// PriorityClass is the Kueue WorkloadPriorityClass; empty picks the kind's default.
	PriorityClass string `json:"priorityClass,omitempty"`
	// Workspace is a notebook's home volume.
	Workspace  *Workspace `json:"workspace,omitempty"`
	Parameters Parameters `json:"parameters"`
	// SimulateDuration is passed to pods as naming.AnnotationSimulateDuration so
	// the local kwok cluster finishes Job pods; empty in production templates.
	SimulateDuration string `json:"simulateDuration,omitempty"`
}

// GPUType is one accelerator choice: a node pool (Kueue ResourceFlavor) and
// the extended resource requested there (whole GPU or MIG slice).
type GPUType struct {
	// Name is the form value, e.g. "h100" or "mig-1g.10gb".
	Name  string `json:"name"`
	Label string `json:"label"`
	// Pool is the node pool and ResourceFlavor name.
	Pool string `json:"pool"`
	// Resource is the extended resource, e.g. nvidia.com/gpu or nvidia.com/mig-1g.10gb.
	Resource string `json:"resource"`
}

// Workspace is where a notebook keeps its files. With a StorageClass it is a
// PersistentVolumeClaim from the StatefulSet's volumeClaimTemplates, which
// survives stop (scale to zero) and resume; without one it is an emptyDir.
type Workspace struct {
	Size         string `json:"size"`
	StorageClass string `json:"storageClass,omitempty"`
	MountPath    string `json:"mountPath"`
}

// IntRange bounds an integer parameter.
type IntRange struct {
	Min     int `json:"min"`
	Max     int `json:"max"`
	Default int `json:"default"`
}

// QuantityRange bounds a resource quantity parameter such as CPU or memory.
type QuantityRange struct {
	Min     string `json:"min"`
	Max     string `json:"max"`
	Default string `json:"default"`
}

// Choice is a named option of a volume parameter (model, dataset, checkpoint).
type Choice struct {
	Name  string `json:"name"`
	Label string `json:"label"`
	// URI is passed to the container in an environment variable.
	URI string `json:"uri,omitempty"`
}

// Parameters is the template's schema: what a researcher may set and within
// which bounds. Optional parameters are nil when the template does not offer them.
type Parameters struct {
	GPUs   IntRange      `json:"gpus"`
	CPU    QuantityRange `json:"cpu"`
	Memory QuantityRange `json:"memory"`
	// Replicas of an inference endpoint.
	Replicas *IntRange `json:"replicas,omitempty"`
	// Nodes of a multi-node training run.
	Nodes *IntRange `json:"nodes,omitempty"`
	// DurationMinutes limits a training run's wall-clock time.
	DurationMinutes *IntRange `json:"durationMinutes,omitempty"`
	// Args is the default argument line; nil means arguments are not editable.
	Args        *string  `json:"args,omitempty"`
	Models      []Choice `json:"models,omitempty"`
	Datasets    []Choice `json:"datasets,omitempty"`
	Checkpoints []Choice `json:"checkpoints,omitempty"`
}

// GPUType returns the named GPU type the template offers.
func (t *Template) GPUType(name string) (GPUType, bool) {
	i := slices.IndexFunc(t.GPUTypes, func(g GPUType) bool { return g.Name == name })
	if i < 0 {
		return GPUType{}, false
	}
	return t.GPUTypes[i], true
}

// AllowedFor reports whether the team may use the template.
func (t *Template) AllowedFor(team string) bool {
	return len(t.Teams) == 0 || slices.Contains(t.Teams, team)
}

// Priority returns the Kueue WorkloadPriorityClass of the template's workloads.
func (t *Template) Priority() string {
	if t.PriorityClass != "" {
		return t.PriorityClass
	}
	return string(t.Kind)
}

var (
	templateName = regexp.MustCompile(`^[a-z]([a-z0-9-]{0,22}[a-z0-9])?$`)
	choiceName   = regexp.MustCompile(`^[a-z0-9]([a-z0-9.-]{0,38}[a-z0-9])?$`)
)

// Parse reads a template from its YAML file form and checks it.
func Parse(data []byte) (Template, error) {
	var t Template
	if err := yaml.UnmarshalStrict(data, &t); err != nil {
		return Template{}, fmt.Errorf("parse template: %w", err)
	}
	if err := t.Validate(); err != nil {
		return Template{}, err
	}
	return t, nil
}

// ParseAll reads a multi-document YAML file of templates.
func ParseAll(data []byte) ([]Template, error) {
	var out []Template
	for i, doc := range bytes.Split(data, []byte("\n---")) {
		if len(bytes.TrimSpace(stripComments(doc))) == 0 {
			continue
		}
		t, err := Parse(doc)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i+1, err)
		}
		out = append(out, t)
	}
	return out, nil
}

func stripComments(doc []byte) []byte {
	var b bytes.Buffer
	for line := range bytes.Lines(doc) {
		if !bytes.HasPrefix(bytes.TrimSpace(line), []byte("#")) {
			b.Write(line)
		}
	}
	return b.Bytes()
}

// Marshal returns the template's YAML file form, without its version.
func Marshal(t Template) ([]byte, error) {
	t.Version = 0
	b, err := yaml.Marshal(t)
	if err != nil {
		return nil, fmt.Errorf("marshal template %s: %w", t.Name, err)
	}
	return b, nil
}

// Validate checks the template's own consistency (not policy: the image
// allowlist and security rules live in internal/policy).
func (t *Template) Validate() error {
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if !templateName.MatchString(t.Name) {
		add("name %q must be lowercase letters, digits and dashes, start with a letter, at most 24 characters", t.Name)
	}
	switch t.Kind {
	case KindNotebook, KindTraining, KindInference:
	default:
		add("kind %q must be notebook, training or inference", t.Kind)
	}
	if t.PriorityClass != "" && !slices.Contains(t.Kind.Priorities(), t.PriorityClass) {
		add("priority class %q is not one a %s template may use (%s)", t.PriorityClass, t.Kind, strings.Join(t.Kind.Priorities(), " or "))
	}
	if t.Title == "" {
		add("title is required")
	}
	if t.Image == "" {
		add("image is required")
	}
	if len(t.GPUTypes) == 0 {
		add("at least one GPU type is required")
	}
	seen := map[string]bool{}
	for _, g := range t.GPUTypes {
		if !choiceName.MatchString(g.Name) || seen[g.Name] {
			add("GPU type name %q must be unique, lowercase letters, digits, dots and dashes", g.Name)
		}
		seen[g.Name] = true
		if g.Pool == "" || g.Resource == "" {
			add("GPU type %q needs a pool and a resource", g.Name)
		}
	}
	p := t.Parameters
	checkInt := func(name string, r *IntRange, min int) {
		if r == nil {
			return
		}
		if r.Min < min || r.Max < r.Min || r.Default < r.Min || r.Default > r.Max {
			add("%s range must satisfy %d <= min <= default <= max", name, min)
		}
	}
	checkInt("gpus", &p.GPUs, 1)
	checkInt("replicas", p.Replicas, 0)
	checkInt("nodes", p.Nodes, 1)
	checkInt("durationMinutes", p.DurationMinutes, 1)
	checkQty := func(name string, r QuantityRange) {
		lo, err1 := resource.ParseQuantity(r.Min)
		hi, err2 := resource.ParseQuantity(r.Max)
		def, err3 := resource.ParseQuantity(r.Default)
		if err := errors.Join(err1, err2, err3); err != nil {
			add("%s range: %w", name, err)
			return
		}
		if lo.Sign() <= 0 || hi.Cmp(lo) < 0 || def.Cmp(lo) < 0 || def.Cmp(hi) > 0 {
			add("%s range must satisfy 0 < min <= default <= max", name)
		}
	}
	checkQty("cpu", p.CPU)
	checkQty("memory", p.Memory)
	for field, choices := range map[string][]Choice{"models": p.Models, "datasets": p.Datasets, "checkpoints": p.Checkpoints} {
		names := map[string]bool{}
		for _, c := range choices {
			if !choiceName.MatchString(c.Name) || names[c.Name] {
				add("%s choice %q must be unique, lowercase letters, digits, dots and dashes", field, c.Name)
			}
			names[c.Name] = true
		}
	}
	switch t.Kind {
	case KindInference:
		if p.Replicas == nil {
			add("an inference template needs a replicas range")
		}
		if t.Port == 0 {
			add("an inference template needs a port")
		}
	case KindNotebook:
		if t.Port == 0 {
			add("a notebook template needs a port")
		}
		if t.Workspace == nil {
			add("a notebook template needs a workspace")
		} else if _, err := resource.ParseQuantity(t.Workspace.Size); err != nil || !strings.HasPrefix(t.Workspace.MountPath, "/") {
			add("the workspace needs a size and an absolute mount path")
		}
	case KindTraining:
		if t.MultiNode && p.Nodes == nil {
			add("a multi-node training template needs a nodes range")
		}
	}
	if t.PodRetries < 0 || t.PodRetries > 10 || (t.PodRetries > 0 && t.Kind != KindTraining) {
		add("podRetries is 0 to 10, for training templates only")
	}
	if len(errs) > 0 {
		return fmt.Errorf("template %s: %w", t.Name, errors.Join(errs...))
	}
	return nil
}

// LoadDir reads every *.yaml file in dir as templates, in file name order.
func LoadDir(dir string) ([]Template, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, fmt.Errorf("list templates in %s: %w", dir, err)
	}
	slices.Sort(files)
	var out []Template
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("read template file: %w", err)
		}
		ts, err := ParseAll(data)
		if err != nil {
			return nil, fmt.Errorf("template file %s: %w", f, err)
		}
		out = append(out, ts...)
	}
	return out, nil
}
