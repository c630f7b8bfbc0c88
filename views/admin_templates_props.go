package views

import "time"

// Form fields of the admin catalog pages.
const (
	FieldTemplateSpec    = "spec"
	FieldTemplateVersion = "version"
	FieldTemplateNewName = "new_name"
	FieldDiffFrom        = "from"
	FieldDiffTo          = "to"
	FieldImportYAML      = "yaml"
	FieldPriceFlavor     = "flavor"
	FieldPriceUSD        = "usd_per_hour"
	FieldPriceFrom       = "effective_from"
	FieldRegistries      = "registries"
)

// AdminTemplatesProps is the admin's catalog: every template, newest version.
type AdminTemplatesProps struct {
	Templates []AdminTemplateRow
	// ImportYAML is the import form's text after a refused import.
	ImportYAML     string
	ImportProblems []string
}

// AdminTemplateRow is one template in the admin's catalog.
type AdminTemplateRow struct {
	Name, Title, Kind string
	Version           int
	// Status is "draft", "published" or "retired".
	Status string
	// Published is the newest published version, 0 when none.
	Published int
	CreatedBy string
	CreatedAt time.Time
}

// AdminTemplateEditProps is the template editor.
type AdminTemplateEditProps struct {
	// Name is empty for a new template.
	Name string
	// Version is the version shown, 0 for text not saved yet.
	Version int
	// Status of the shown version: "draft", "published", "retired" or "unsaved".
	Status string
	// Spec is the YAML in the editor.
	Spec string
	// Problems are why the YAML is not a valid template.
	Problems []string
	// Violations are the policy problems that stop publishing.
	Violations []string
	// Schema is the parsed template's summary; nil when it does not parse.
	Schema *TemplateSchema
	// PreviewYAML is the objects rendered for sample parameters.
	PreviewYAML string
	Versions    []TemplateVersionRow
	// NewName is the duplicate form's value.
	NewName string
}

// TemplateSchema is what the editor shows of a template besides its YAML.
type TemplateSchema struct {
	Title, Kind, Image string
	// Teams that may use it; empty means every team.
	Teams      []string
	GPUTypes   []GPUTypeRow
	Parameters []ParameterRow
	// SampleTeam is the team the preview is rendered for.
	SampleTeam string
}

// GPUTypeRow is one allowed accelerator: the flavor (node pool) and resource.
type GPUTypeRow struct {
	Name, Label, Pool, Resource string
}

// ParameterRow is one parameter with its bounds and default.
type ParameterRow struct {
	Name, Min, Default, Max string
}

// TemplateVersionRow is one version in a template's history.
type TemplateVersionRow struct {
	Version     int
	Status      string
	CreatedBy   string
	CreatedAt   time.Time
	PublishedBy string
	PublishedAt *time.Time
}

// AdminTemplateDiffProps compares two versions of a template.
type AdminTemplateDiffProps struct {
	Name     string
	From, To int
	Versions []int
	Lines    []DiffLine
}

// DiffLine is a line of a unified diff; Kind is "add", "del", "hunk" or "same".
type DiffLine struct {
	Kind, Text string
}

// AdminPricesProps is the price table and its form.
type AdminPricesProps struct {
	Prices   []PriceRow
	Flavors  []Option
	Form     PriceFormValues
	Problems []string
}

// PriceRow is one stored price.
type PriceRow struct {
	Flavor, Resource string
	USDPerHour       float64
	EffectiveFrom    time.Time
	// State is "current", "future" or "past".
	State string
	SetBy string
}

// PriceFormValues is the price form as typed; Flavor is "flavor|resource".
type PriceFormValues struct {
	Flavor, USDPerHour, EffectiveFrom string
}

// AdminAllowlistProps is the image registry allowlist editor.
type AdminAllowlistProps struct {
	// Registries is the editor's text, one registry per line.
	Registries string
	Problems   []string
	Count      int
}
