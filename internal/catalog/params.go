package catalog

import (
	"fmt"
	"github.com/gantry-dev/gantry/internal/naming"
	"github.com/gantry-dev/gantry/internal/problem"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

const maxArgsLength = 2000

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
		naming.FieldGPUs:   strconv.Itoa(p.GPUs.Default),
		naming.FieldCPU:    p.CPU.Default,
		naming.FieldMemory: p.Memory.Default,
	}
	if len(t.GPUTypes) > 0 {
		out[naming.FieldGPUType] = t.GPUTypes[0].Name
	}
	if p.Replicas != nil {
		out[naming.FieldReplicas] = strconv.Itoa(p.Replicas.Default)
	}
	if p.Nodes != nil {
		out[naming.FieldNodes] = strconv.Itoa(p.Nodes.Default)
	}
	if p.DurationMinutes != nil {
		out[naming.FieldDurationMinutes] = strconv.Itoa(p.DurationMinutes.Default)
	}
	if p.Args != nil {
		out[naming.FieldArgs] = *p.Args
	}
	for field, choices := range map[string][]Choice{naming.FieldModel: p.Models, naming.FieldDataset: p.Datasets, naming.FieldCheckpoint: p.Checkpoints} {
		if len(choices) > 0 {
			out[field] = choices[0].Name
		}
	}
	return out
}

// ParseValues reads form values against the template's schema. Missing
// fields take their defaults. Every problem is a sentence tied to its field.
func (t *Template) ParseValues(in map[string]string) (Values, problem.Fields) {
	errs := problem.Fields{}
	get := func(field string) string {
		if v, ok := in[field]; ok {
			return strings.TrimSpace(v)
		}
		return t.Defaults()[field]
	}
	p := t.Parameters
	var v Values

	v.GPUType = get(naming.FieldGPUType)
	gpu, ok := t.GPUType(v.GPUType)
	if !ok {
		errs.Add(naming.FieldGPUType, fmt.Sprintf("Choose one of the GPU types this template offers: %s.", t.gpuTypeNames()))
	}
	unit := "GPUs"
	if ok && strings.Contains(gpu.Resource, "mig-") {
		unit = "GPU slices"
	}
	v.GPUs = parseInt(errs, naming.FieldGPUs, get(naming.FieldGPUs), p.GPUs, "the number of "+unit)
	v.CPU = parseQuantity(errs, naming.FieldCPU, get(naming.FieldCPU), p.CPU, "CPU cores", "")
	v.Memory = parseQuantity(errs, naming.FieldMemory, get(naming.FieldMemory), p.Memory, "memory", "i")
	if p.Replicas != nil {
		v.Replicas = parseInt(errs, naming.FieldReplicas, get(naming.FieldReplicas), *p.Replicas, "the number of replicas")
	}
	if p.Nodes != nil {
		v.Nodes = parseInt(errs, naming.FieldNodes, get(naming.FieldNodes), *p.Nodes, "the number of nodes")
	} else {
		v.Nodes = 1
	}
	if p.DurationMinutes != nil {
		v.DurationMinutes = parseInt(errs, naming.FieldDurationMinutes, get(naming.FieldDurationMinutes), *p.DurationMinutes, "the time limit in minutes")
	}
	if p.Args != nil {
		line := get(naming.FieldArgs)
		switch {
		case len(line) > maxArgsLength:
			errs.Add(naming.FieldArgs, fmt.Sprintf("The arguments are too long: use at most %d characters.", maxArgsLength))
		case strings.ContainsAny(line, "\x00\n\r"):
			errs.Add(naming.FieldArgs, "Write the arguments on one line.")
		default:
			v.Args = strings.Fields(line)
		}
	}
	v.Model = parseChoice(errs, naming.FieldModel, get(naming.FieldModel), p.Models, "model")
	v.Dataset = parseChoice(errs, naming.FieldDataset, get(naming.FieldDataset), p.Datasets, "dataset")
	v.Checkpoint = parseChoice(errs, naming.FieldCheckpoint, get(naming.FieldCheckpoint), p.Checkpoints, "checkpoint location")
	if len(errs) > 0 {
		return Values{}, errs
	}
	return v, nil
}

// Strings returns the values as form strings, for records and re-rendering.
func (v Values) Strings() map[string]string {
	out := map[string]string{
		naming.FieldGPUType: v.GPUType,
		naming.FieldGPUs:    strconv.Itoa(v.GPUs),
		naming.FieldCPU:     v.CPU.String(),
		naming.FieldMemory:  v.Memory.String(),
	}
	if v.Replicas > 0 {
		out[naming.FieldReplicas] = strconv.Itoa(v.Replicas)
	}
	if v.Nodes > 0 {
		out[naming.FieldNodes] = strconv.Itoa(v.Nodes)
	}
	if v.DurationMinutes > 0 {
		out[naming.FieldDurationMinutes] = strconv.Itoa(v.DurationMinutes)
	}
	if v.Args != nil {
		out[naming.FieldArgs] = strings.Join(v.Args, " ")
	}
	for k, s := range map[string]string{naming.FieldModel: v.Model, naming.FieldDataset: v.Dataset, naming.FieldCheckpoint: v.Checkpoint} {
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

func parseInt(errs problem.Fields, field, s string, r IntRange, what string) int {
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

func parseQuantity(errs problem.Fields, field, s string, r QuantityRange, what, suffixHint string) resource.Quantity {
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

func parseChoice(errs problem.Fields, field, s string, choices []Choice, what string) string {
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
