package catalog

import (
	"fmt"
	"github.com/gantry-dev/gantry/internal/problem"
	"maps"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Form field names, shared by the launch form, the JSON API and error lists.
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

const maxArgsLength = 2000

// FieldErrors are problems with what a person typed, one sentence per form
// field. The empty key holds problems not tied to a field. It is shown to
// users as is.
type FieldErrors map[string]string

// Problem is Invalid with the sentences.
func (e FieldErrors) Problem() problem.Problem {
	return problem.Problem{Kind: problem.Invalid, Title: "Check your input", Detail: e.Error()}
}

// InvalidFields names the fields to correct.
func (e FieldErrors) InvalidFields() map[string]string { return e }

// Error lists the sentences, sorted by field.
func (e FieldErrors) Error() string {
	keys := slices.Sorted(maps.Keys(e))
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, e[k])
	}
	return strings.Join(parts, " ")
}

// Add records msg for field unless the field already has a problem.
func (e FieldErrors) Add(field, msg string) {
	if _, ok := e[field]; !ok {
		e[field] = msg
	}
}

// Values are a launch's parameters, parsed and within the template's bounds.
type Values struct {
	GPUType         string
	GPUs            int
	CPU             resource.Quantity
	Memory          resource.Quantity
	Replicas        int
	Nodes           int
	DurationMinutes int
	Args            []string
	Model           string
	Dataset         string
	Checkpoint      string
}

// Defaults returns the template's default form values, as strings keyed by field.
func (t *Template) Defaults() map[string]string {
	p := t.Parameters
	out := map[string]string{
		FieldGPUs:   strconv.Itoa(p.GPUs.Default),
		FieldCPU:    p.CPU.Default,
		FieldMemory: p.Memory.Default,
	}
	if len(t.GPUTypes) > 0 {
		out[FieldGPUType] = t.GPUTypes[0].Name
	}
	if p.Replicas != nil {
		out[FieldReplicas] = strconv.Itoa(p.Replicas.Default)
	}
	if p.Nodes != nil {
		out[FieldNodes] = strconv.Itoa(p.Nodes.Default)
	}
	if p.DurationMinutes != nil {
		out[FieldDurationMinutes] = strconv.Itoa(p.DurationMinutes.Default)
	}
	if p.Args != nil {
		out[FieldArgs] = *p.Args
	}
	for field, choices := range map[string][]Choice{FieldModel: p.Models, FieldDataset: p.Datasets, FieldCheckpoint: p.Checkpoints} {
		if len(choices) > 0 {
			out[field] = choices[0].Name
		}
	}
	return out
}

// ParseValues reads form values against the template's schema. Missing
// fields take their defaults. Every problem is a sentence tied to its field.
func (t *Template) ParseValues(in map[string]string) (Values, FieldErrors) {
	errs := FieldErrors{}
	get := func(field string) string {
		if v, ok := in[field]; ok {
			return strings.TrimSpace(v)
		}
		return t.Defaults()[field]
	}
	p := t.Parameters
	var v Values

	v.GPUType = get(FieldGPUType)
	gpu, ok := t.GPUType(v.GPUType)
	if !ok {
		errs.Add(FieldGPUType, fmt.Sprintf("Choose one of the GPU types this template offers: %s.", t.gpuTypeNames()))
	}
	unit := "GPUs"
	if ok && strings.Contains(gpu.Resource, "mig-") {
		unit = "GPU slices"
	}
	v.GPUs = parseInt(errs, FieldGPUs, get(FieldGPUs), p.GPUs, "the number of "+unit)
	v.CPU = parseQuantity(errs, FieldCPU, get(FieldCPU), p.CPU, "CPU cores", "")
	v.Memory = parseQuantity(errs, FieldMemory, get(FieldMemory), p.Memory, "memory", "i")
	if p.Replicas != nil {
		v.Replicas = parseInt(errs, FieldReplicas, get(FieldReplicas), *p.Replicas, "the number of replicas")
	}
	if p.Nodes != nil {
		v.Nodes = parseInt(errs, FieldNodes, get(FieldNodes), *p.Nodes, "the number of nodes")
	} else {
		v.Nodes = 1
	}
	if p.DurationMinutes != nil {
		v.DurationMinutes = parseInt(errs, FieldDurationMinutes, get(FieldDurationMinutes), *p.DurationMinutes, "the time limit in minutes")
	}
	if p.Args != nil {
		line := get(FieldArgs)
		switch {
		case len(line) > maxArgsLength:
			errs.Add(FieldArgs, fmt.Sprintf("The arguments are too long: use at most %d characters.", maxArgsLength))
		case strings.ContainsAny(line, "\x00\n\r"):
			errs.Add(FieldArgs, "Write the arguments on one line.")
		default:
			v.Args = strings.Fields(line)
		}
	}
	v.Model = parseChoice(errs, FieldModel, get(FieldModel), p.Models, "model")
	v.Dataset = parseChoice(errs, FieldDataset, get(FieldDataset), p.Datasets, "dataset")
	v.Checkpoint = parseChoice(errs, FieldCheckpoint, get(FieldCheckpoint), p.Checkpoints, "checkpoint location")
	if len(errs) > 0 {
		return Values{}, errs
	}
	return v, nil
}

// Strings returns the values as form strings, for records and re-rendering.
func (v Values) Strings() map[string]string {
	out := map[string]string{
		FieldGPUType: v.GPUType,
		FieldGPUs:    strconv.Itoa(v.GPUs),
		FieldCPU:     v.CPU.String(),
		FieldMemory:  v.Memory.String(),
	}
	if v.Replicas > 0 {
		out[FieldReplicas] = strconv.Itoa(v.Replicas)
	}
	if v.Nodes > 0 {
		out[FieldNodes] = strconv.Itoa(v.Nodes)
	}
	if v.DurationMinutes > 0 {
		out[FieldDurationMinutes] = strconv.Itoa(v.DurationMinutes)
	}
	if v.Args != nil {
		out[FieldArgs] = strings.Join(v.Args, " ")
	}
	for k, s := range map[string]string{FieldModel: v.Model, FieldDataset: v.Dataset, FieldCheckpoint: v.Checkpoint} {
		if s != "" {
			out[k] = s
		}
	}
	return out
}

func (t *Template) gpuTypeNames() string {
	names := make([]string, 0, len(t.GPUTypes))
	for _, g := range t.GPUTypes {
		names = append(names, g.Label)
	}
	return strings.Join(names, ", ")
}

func parseInt(errs FieldErrors, field, s string, r IntRange, what string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		errs.Add(field, fmt.Sprintf("Enter %s as a whole number, for example %d.", what, r.Default))
		return 0
	}
	if n < r.Min || n > r.Max {
		errs.Add(field, fmt.Sprintf("This template allows %s from %d to %d; you asked for %d.", what, r.Min, r.Max, n))
		return 0
	}
	return n
}

func parseQuantity(errs FieldErrors, field, s string, r QuantityRange, what, suffixHint string) resource.Quantity {
	example := r.Default
	if suffixHint != "" && !strings.HasSuffix(example, "i") {
		example += " (or 16Gi)"
	}
	q, err := resource.ParseQuantity(s)
	if err != nil || q.Sign() <= 0 {
		errs.Add(field, fmt.Sprintf("Enter %s as a number like %s.", what, example))
		return resource.Quantity{}
	}
	lo, hi := resource.MustParse(r.Min), resource.MustParse(r.Max)
	if q.Cmp(lo) < 0 || q.Cmp(hi) > 0 {
		errs.Add(field, fmt.Sprintf("This template allows %s from %s to %s; you asked for %s.", what, r.Min, r.Max, s))
		return resource.Quantity{}
	}
	return q
}

func parseChoice(errs FieldErrors, field, s string, choices []Choice, what string) string {
	if len(choices) == 0 {
		return ""
	}
	for _, c := range choices {
		if c.Name == s {
			return s
		}
	}
	labels := make([]string, 0, len(choices))
	for _, c := range choices {
		labels = append(labels, c.Label)
	}
	errs.Add(field, fmt.Sprintf("Choose a %s from the list: %s.", what, strings.Join(labels, ", ")))
	return ""
}
