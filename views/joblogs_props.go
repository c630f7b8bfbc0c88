package views

import "github.com/a-h/templ"

// JobLogsProps is a job's log page: which container's log, its tail, and
// links to the older lines, the previous container, following and download.
type JobLogsProps struct {
	Team, Name string
	// Containers are the job's pods and containers to choose from.
	Containers []LogChoice
	// Pod and Container are the chosen ones; empty when the job has no pods.
	Pod, Container string
	Previous       bool
	// Lines are the last lines of the log, oldest first; Truncated counts
	// lines cut to the display limit.
	Lines     []string
	Truncated int
	// OlderURL shows more of the log's end; empty when the whole log is shown.
	OlderURL string
	// AtLimit says the page shows as much as it ever will: older lines are
	// in the download only.
	AtLimit bool
	// Message explains an empty log or a job without pods.
	Message                                    string
	JobURL, RefreshURL, FollowURL, DownloadURL string
	// PreviousURL reads the container before its last restart (empty when
	// it never restarted); CurrentURL goes back from there.
	PreviousURL, CurrentURL string
}

// LogChoice is one pod's container on the log page.
type LogChoice struct {
	Label, URL string
	Selected   bool
}

// JobLogsFollowProps is a container's log streamed as it is written.
type JobLogsFollowProps struct {
	Team, Name, Pod, Container string
	BackURL, FollowURL         string
	// Lines writes the log lines as they arrive, flushing each.
	Lines templ.Component
}
