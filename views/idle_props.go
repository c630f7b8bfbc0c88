package views

// Form fields of the idle reclaim pages.
const (
	FieldIdleReason    = "reason"
	FieldIdleTeam      = "team"
	FieldIdleKind      = "kind"
	FieldIdleThreshold = "threshold"
	FieldIdleWindow    = "window"
	FieldIdleGrace     = "grace"
	FieldIdleExtension = "extension"
)

// JobIdleProps is what the job page says about idleness and the reclaim.
// A nil *JobIdleProps shows nothing.
type JobIdleProps struct {
	// Policy says the rule in a sentence: "idle when its GPUs stay under 5% for 60 minutes; warned, then stopped".
	Policy string
	// Warning is the banner of a notebook about to be stopped: when, and
	// the "keep it running" form.
	Warning   string
	KeepURL   string
	KeepLabel string
	// Flagged says a training job has been idle for the window.
	Flagged string
	// Reclaimed says why the reclaim stopped or scaled the job.
	Reclaimed string
	// Hold says what holds the job now (exemption with its reason, or extension).
	Hold string
	// CanExempt shows the exemption form (leads and admins); Exempt is set
	// when a removable exemption or extension holds.
	CanExempt   bool
	ExemptURL   string
	UnexemptURL string
	Exempt      bool
}

// AdminIdleProps is the admin page of idle reclaim policies.
type AdminIdleProps struct {
	Bounds   string
	Policies []IdlePolicyRow
	Teams    []Option
	Kinds    []Option
	Form     IdlePolicyForm
	Problems []string
}

// IdlePolicyRow is one policy as the table shows it.
type IdlePolicyRow struct {
	Team, Kind, Threshold, Window, Grace, Extension, Action, UpdatedBy string
	Default                                                            bool
}

// IdlePolicyForm is the values of the policy form (minutes for durations).
type IdlePolicyForm struct {
	Team, Kind, Threshold, Window, Grace, Extension string
}
