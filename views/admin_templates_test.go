package views

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestTemplateEditorPublishOnlyWithoutViolations(t *testing.T) {
	nav := Nav{User: &NavUser{Username: "erin", Role: RoleAdmin, IsAdmin: true}, CSRFToken: "tok"}
	schema := &TemplateSchema{Title: "T", Kind: "training", Image: "nvcr.io/x:1", SampleTeam: "vision",
		GPUTypes:   []GPUTypeRow{{Name: "h100", Label: "H100", Pool: "h100-pool", Resource: "nvidia.com/gpu"}},
		Parameters: []ParameterRow{{Name: "GPUs per pod", Min: "1", Default: "1", Max: "8"}}}
	cases := map[string]struct {
		props          AdminTemplateEditProps
		wantPublish    bool
		wantDisabled   bool
		wantViolation  string
		wantRetired    bool
		wantSaveButton bool
	}{
		"clean draft can be published": {
			props:       AdminTemplateEditProps{Name: "t", Version: 2, Status: "draft", Schema: schema, PreviewYAML: "kind: Job"},
			wantPublish: true, wantSaveButton: true,
		},
		"draft with violations cannot": {
			props:       AdminTemplateEditProps{Name: "t", Version: 2, Status: "draft", Schema: schema, Violations: []string{"The container may not run privileged."}},
			wantPublish: true, wantDisabled: true, wantViolation: "may not run privileged", wantSaveButton: true,
		},
		"published version has nothing to publish": {
			props:          AdminTemplateEditProps{Name: "t", Version: 1, Status: "published", Schema: schema},
			wantSaveButton: true,
		},
		"retired template says so and cannot be saved": {
			props:       AdminTemplateEditProps{Name: "t", Version: 1, Status: "retired", Schema: schema},
			wantRetired: true,
		},
		"unsaved preview has no publish button": {
			props:          AdminTemplateEditProps{Name: "t", Status: "unsaved", Schema: schema, PreviewYAML: "kind: Job"},
			wantSaveButton: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			doc := render(t, AdminTemplateEditPage(nav, tc.props))
			assertCSPSafe(t, doc)
			publish := byTestID(doc, "template-publish")
			assert.Equal(t, tc.wantPublish, publish.Length() == 1)
			_, disabled := publish.Attr("disabled")
			assert.Equal(t, tc.wantDisabled, disabled)
			if tc.wantViolation != "" {
				assert.Contains(t, text(byTestID(doc, "violations")), tc.wantViolation)
			} else {
				assert.Equal(t, 0, byTestID(doc, "violations").Length())
			}
			assert.Equal(t, tc.wantRetired, byTestID(doc, "retired").Length() == 1)
			assert.Equal(t, tc.wantSaveButton, byTestID(doc, "template-save").Length() == 1)
			assert.Contains(t, text(byTestID(doc, "schema-gpus")), "h100-pool", "the allowed flavors are shown")
			assert.Contains(t, text(byTestID(doc, "schema-params")), "GPUs per pod")
		})
	}
}
