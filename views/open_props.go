package views

// JobUnavailableProps explain why a notebook cannot be opened now.
type JobUnavailableProps struct {
	Team, Name string
	// Words is the sentence: starting, stopped, no ready replica.
	Words string
	// Reason is a stable word for tests and scripts (data-reason).
	Reason string
	JobURL string
	// ResumeURL is set for a stopped notebook: the page offers Resume.
	ResumeURL string
}

// NotebookOpenPanel is the job page's way into a notebook.
type NotebookOpenPanel struct {
	// OpenURL is /teams/{team}/jobs/{name}/open/.
	OpenURL string
	// Shared reports whether the team may open it too.
	Shared bool
	// ShareURL toggles sharing; empty unless the viewer owns the notebook.
	ShareURL string
	// MayOpen reports whether the viewer may open it (owner, or shared).
	MayOpen bool
}

// EndpointPanel is the job page's way into an inference endpoint: its URL
// through the portal, a curl example, its figures and its keys.
type EndpointPanel struct {
	// URL is the endpoint's absolute base URL through the portal.
	URL string
	// Curl is a ready-to-paste example (with the new key when one was
	// just made, else a placeholder).
	Curl string
	// NewKey is the secret of a key just made, shown once.
	NewKey      string
	KeysURL     string
	Keys        []EndpointKeyRow
	Requests    string
	ErrorRate   string
	LatencyP50  string
	LatencyP99  string
	StatsCaveat string
}

// EndpointKeyRow is one key in the endpoint's list.
type EndpointKeyRow struct {
	ID                       int64
	Label, Prefix, CreatedBy string
	Created, Expires, State  string
	RevokeURL                string
}
