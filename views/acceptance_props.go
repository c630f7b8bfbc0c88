package views

// AcceptanceStep is one of a run's seven steps as the report shows it.
type AcceptanceStep struct {
	Number int
	Title  string
	// Status is passed, failed, running, pending or skipped.
	Status    string
	Figure    string
	Threshold string
	Summary   string
}

// AcceptanceRunProps is a run's report page and its live fragment.
type AcceptanceRunProps struct {
	ID        int64
	Pool      string
	Team      string
	Status    string
	Verdict   string
	StartedBy string
	StartedAt string
	Job       string
	JobURL    string
	Cost      string
	Steps     []AcceptanceStep
	// Running keeps the fragment refreshing.
	Running bool
}

// AcceptanceRunRow is one run in a pool's history.
type AcceptanceRunRow struct {
	ID        int64
	Status    string
	Verdict   string
	StartedBy string
	StartedAt string
	Cost      string
	Ratio     string
	// Figures are the run's key measurements side by side, so a regression
	// after a driver or image change shows in the history.
	Figures string
}

// AcceptanceDefinitionView is a definition's fields as form values.
type AcceptanceDefinitionView struct {
	Pool, Team, Template, Image, GPUs, Nodes, Dataset, Weights, Window string
	Benchmark                                                          bool
	MaxQueueWait, MaxDataPull, MinBusBandwidth, MaxCheckpoint          string
	MaxRecovery, MinThroughput, BaselineLabel, BaselinePrice, MinRatio string
	UpdatedBy, UpdatedAt                                               string
}

// PoolAcceptanceProps is a pool's acceptance page.
type PoolAcceptanceProps struct {
	Pool       string
	Definition *AcceptanceDefinitionView
	MayStart   bool
	History    []AcceptanceRunRow
}

// AcceptanceAdminProps is the admins' page of every pool's definition.
type AcceptanceAdminProps struct {
	Definitions []AcceptanceDefinitionView
	// New is the empty form for a pool without a definition; Errors its
	// problems by field after a refused save.
	New    AcceptanceDefinitionView
	Errors map[string]string
	// ErrorPool is the pool whose form the errors belong to.
	ErrorPool string
}

func (p AcceptanceAdminProps) errorsFor(pool string) map[string]string {
	if p.ErrorPool != pool {
		return nil
	}
	return p.Errors
}
