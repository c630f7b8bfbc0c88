package views

// JobAttemptsView is the job page's list of attempts. Shown is false
// when attempts are not recorded on this portal.
type JobAttemptsView struct {
	Shown bool
	Rows  []AttemptRow
	// FirstFailure names the pod that failed first in the last failed
	// attempt of a multi-node job: "pod train-1 (index 1) on node n2".
	FirstFailure string
}

// AttemptRow is one attempt: when it ran, how it ended, and how long the
// job took to run again after the attempt before it.
type AttemptRow struct {
	Number         int
	Started, Ended string
	Ending, Words  string
	// FirstPod is the pod whose failure ended it, with its node and index.
	FirstPod   string
	AlsoFailed string
	Recovery   string
}

// TeamRecoveryView is the team page's recovery figure.
type TeamRecoveryView struct {
	Shown bool
	// Count recoveries over the last Days days; Median and P90 in words.
	Count       int
	Days        int
	Median, P90 string
}

// TeamWebhookView is the team page's webhook: its URL, the form to change
// it (leads and admins) and the latest deliveries.
type TeamWebhookView struct {
	Shown bool
	URL   string
	// UpdatedBy and UpdatedAt say who set it, when.
	UpdatedBy, UpdatedAt string
	// FormURL is where the form posts; empty for people who may not change it.
	FormURL    string
	Deliveries []WebhookDeliveryRow
}

// WebhookDeliveryRow is one delivery of a job ending to the webhook.
type WebhookDeliveryRow struct {
	Created, Job, Ending, Outcome string
	Failed                        bool
}
