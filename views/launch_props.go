package views

// Form field names of the launch form that are not template parameters.
const (
	FieldLaunchID = "launchId"
	FieldTeam     = "team"
	// FieldVersion carries the template version the form shows, so a
	// submit after a newer version was published is refused, not swapped.
	FieldVersion = "version"
)

// Option is one choice of a select.
type Option struct {
	Value, Label string
}

// TemplateCard is a template as the templates list shows it.
type TemplateCard struct {
	Name, Title, Description, Kind, Image string
	Version                               int
	// Teams are the user's teams that may use it.
	Teams []string
	// GPUTypes are the accelerator labels it offers.
	GPUTypes []string
}

// TemplatesProps is the templates list page.
type TemplatesProps struct {
	Templates []TemplateCard
}

// FormField is one generated input of a launch form.
type FormField struct {
	// Name is the form field name; Type is "number", "text" or "select".
	Name, Label, Hint, Type, Value, Error string
	Min, Max, Step                        string
	Options                               []Option
}

// LaunchFormProps is the launch form generated from a template's schema.
type LaunchFormProps struct {
	Template TemplateCard
	Action   string
	// LaunchID is the form's idempotency key, created when it was first rendered.
	LaunchID string
	Team     string
	Teams    []Option
	Fields   []FormField
	// Error is a problem not tied to one field, in words.
	Error string
	// TeamError is a problem with the chosen team.
	TeamError string
	// RelaunchOf names the run the form is pre-filled from; Changes says
	// what differs from it ("memory 1Gi → 2Gi"), the suggested fix.
	RelaunchOf string
	Changes    []string
}

// JobPod is one pod of a job.
type JobPod struct {
	Name, Phase, Node, Pool string
}

// JobAction is a button on a job page.
type JobAction struct {
	Label, URL, TestID string
	Danger             bool
}

// JobProps is a job's page.
type JobProps struct {
	Team, Name, Kind, Owner, Template, Pool, Namespace string
	Version                                            int
	Status                                             JobStatusPanel
	Parameters                                         []Option
	// ManifestURL is the page of the manifest the launch applied; empty
	// for a workload made outside the portal.
	ManifestURL string
	// ServiceDNS and PortForward say how to reach a notebook or endpoint.
	ServiceDNS, PortForward, LocalURL string
	Actions                           []JobAction
	// Scale is set for endpoints: the replica range and current value.
	Scale *ScaleForm
	// Verdict is the result section (accepted or rejected); nil without accounting.
	Verdict *VerdictProps
	// Open is set for notebooks, Endpoint for inference endpoints: how to
	// reach them through the portal.
	Open     *NotebookOpenPanel
	Endpoint *EndpointPanel
	// Idle is the idle reclaim card; nil without the reclaim.
	Idle *JobIdleProps
	// Attempts lists every attempt of the job.
	Attempts JobAttemptsView
	// Outside marks a workload created in the team namespace without the
	// portal (kubectl): there is no launch record, template or manifest.
	Outside bool
}

// ScaleForm scales an endpoint within its range.
type ScaleForm struct {
	URL                string
	Min, Max, Replicas int
}

// JobRow is one row of the jobs list.
type JobRow struct {
	Team, Name, Kind, Owner, Template, Phase, Pool, URL string
	// Outside marks a workload created without the portal (kubectl).
	Outside bool
}

func joinComma(items []string) string {
	out := ""
	for i, s := range items {
		if i > 0 {
			out += ", "
		}
		out += s
	}
	return out
}

// JobManifestProps is the page of the manifest a job's launch applied.
type JobManifestProps struct {
	Name, JobURL, Template string
	Version                int
	Manifest               string
}
