package catalog

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
	yamlv3 "go.yaml.in/yaml/v3"
	"sigs.k8s.io/yaml"

	"github.com/gantry-dev/gantry/internal/naming"
)

// Spec returns the template's stored JSON form, without its version, and
// its digest; equal content gives an equal digest.
func Spec(t Template) (spec []byte, digest string, err error) {
	t.Version = 0
	spec, err = json.Marshal(t)
	if err != nil {
		return nil, "", fmt.Errorf("encode template %s: %w", t.Name, err)
	}
	sum := sha256.Sum256(spec)
	return spec, hex.EncodeToString(sum[:]), nil
}

// FileYAML is the template's file form (as in deploy/templates) with the
// fields in the order of the Template type — name, kind, title first —
// rather than sorted, so exports and diffs read like the seeded files.
// Parse reads it back to an equal template.
func FileYAML(t Template) ([]byte, error) {
	spec, _, err := Spec(t)
	if err != nil {
		return nil, err
	}
	var doc yamlv3.Node
	if err := yamlv3.Unmarshal(spec, &doc); err != nil {
		return nil, fmt.Errorf("format template %s: %w", t.Name, err)
	}
	plain(&doc)
	var b strings.Builder
	enc := yamlv3.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, fmt.Errorf("format template %s: %w", t.Name, err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("format template %s: %w", t.Name, err)
	}
	return []byte(b.String()), nil
}

// plain drops the JSON quoting and flow style, so the encoder writes block
// YAML and quotes only strings that need it.
func plain(n *yamlv3.Node) {
	n.Style = 0
	for _, c := range n.Content {
		plain(c)
	}
}

// Diff is a unified line diff of two versions' YAML file forms; empty when
// they are equal.
func Diff(from, to Template) (string, error) {
	a, err := FileYAML(from)
	if err != nil {
		return "", err
	}
	b, err := FileYAML(to)
	if err != nil {
		return "", err
	}
	out, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: difflib.SplitLines(string(a)), B: difflib.SplitLines(string(b)),
		FromFile: fmt.Sprintf("%s v%d", from.Name, from.Version), ToFile: fmt.Sprintf("%s v%d", to.Name, to.Version),
		Context: 3,
	})
	if err != nil {
		return "", fmt.Errorf("diff template %s: %w", from.Name, err)
	}
	return out, nil
}

// Sample is a preview of a template: its objects rendered with the default
// parameters for a sample team, and their YAML.
type Sample struct {
	Values   Values
	Rendered Rendered
	// YAML is every object, in creation order, as one multi-document file.
	YAML string
}

// SampleLaunchID is the launch id of previews; it names the sample objects.
const SampleLaunchID = "preview0"

// RenderSample renders the template with its default parameters for team
// (the first allowed team when empty), as an admin's preview.
func RenderSample(t *Template, team string) (Sample, error) {
	if team == "" {
		team = "sample"
		if len(t.Teams) > 0 {
			team = t.Teams[0]
		}
	}
	v, errs := t.ParseValues(t.Defaults())
	if len(errs) > 0 {
		return Sample{}, errs
	}
	out, err := Render(t, Target{Team: team, Namespace: naming.Namespace(team), CostCenter: "sample", Owner: "preview",
		LaunchID: SampleLaunchID, Queue: naming.LocalQueue}, v)
	if err != nil {
		return Sample{}, err
	}
	var b strings.Builder
	for i, obj := range out.Objects {
		y, err := yaml.Marshal(obj)
		if err != nil {
			return Sample{}, fmt.Errorf("preview %s: encode %s: %w", t.Name, obj.GetName(), err)
		}
		if i > 0 {
			b.WriteString("---\n")
		}
		b.Write(y)
	}
	return Sample{Values: v, Rendered: out, YAML: b.String()}, nil
}
