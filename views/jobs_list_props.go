package views

// JobListFilter is what the job list is narrowed to, from the query string.
type JobListFilter struct {
	// Team is one of the user's teams, or empty for all of them.
	Team string
	// Kind is training, notebook or inference, or empty for any.
	Kind string
	// Mine keeps only the user's own jobs.
	Mine bool
}

// JobListProps is one page of the jobs of the user's teams, newest first.
type JobListProps struct {
	Jobs []JobRow
	// Error is set when the cluster could not be read.
	Error  string
	Filter JobListFilter
	// Teams and Kinds are the choices of the filter form.
	Teams, Kinds []string
	// Total counts the matching jobs on every page; Page is 1-based.
	Total, Page, Pages int
	// NewerURL and OlderURL link the neighbouring pages; empty at either end.
	NewerURL, OlderURL string
}

// Filtered reports whether the list is narrowed by any filter.
func (f JobListFilter) Filtered() bool { return f.Team != "" || f.Kind != "" || f.Mine }
