package acceptance

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/gantry-dev/gantry/internal/money"
	"github.com/gantry-dev/gantry/internal/store"
)

// Status of a step or a run.
type Status string

// Statuses. A run is running, passed or failed; a step may also be
// pending (not reached) or skipped (not asked for: no benchmark).
const (
	StatusPending Status = "pending"
	StatusRunning Status = "running"
	StatusPassed  Status = "passed"
	StatusFailed  Status = "failed"
	StatusSkipped Status = "skipped"
)

// The seven steps, in the guide's order and words.
var stepTitles = [...]string{
	"Submit a queued training job with the production container",
	"Pull the dataset sample and base model weights",
	"Run the multi-node communication benchmark",
	"Train for the fixed window",
	"Write a checkpoint, delete a pod, restore from the checkpoint",
	"Export GPU, network, storage, queue and cost labels",
	"Compare useful work against the baseline",
}

// StepCount is the number of steps of a run.
const StepCount = len(stepTitles)

// Measure is one figure a step judged against its threshold.
type Measure struct {
	Name      string  `json:"name"`
	Figure    float64 `json:"figure"`
	Threshold float64 `json:"threshold"`
	Unit      string  `json:"unit"`
	// AtMost is true when the figure passes at or below the threshold.
	AtMost bool `json:"atMost"`
	Passed bool `json:"passed"`
}

// Words is the measure as a sentence: "checkpoint write 41.2 s, at most 30 s allowed".
func (m Measure) Words() string {
	bound := "at least"
	if m.AtMost {
		bound = "at most"
	}
	return fmt.Sprintf("%s %s, %s %s allowed", m.Name, figure(m.Figure, m.Unit), bound, figure(m.Threshold, m.Unit))
}

func figure(v float64, unit string) string {
	s := strconv.FormatFloat(v, 'f', -1, 64)
	if math.Abs(v) >= 100 || v != math.Round(v*100)/100 {
		s = strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64)
	}
	switch unit {
	case "":
		return s
	case "×":
		return s + "×"
	}
	return s + " " + unit
}

// Step is one step of a run as the report shows it.
type Step struct {
	Number int    `json:"number"`
	Title  string `json:"title"`
	Status Status `json:"status"`
	// Figure, Threshold and Unit are the step's main measure (nil until measured).
	Figure    *float64 `json:"figure"`
	Threshold *float64 `json:"threshold"`
	Unit      string   `json:"unit"`
	// Summary says in words what was measured and why the step passed or failed.
	Summary    string     `json:"summary"`
	Measures   []Measure  `json:"measures"`
	StartedAt  *time.Time `json:"startedAt"`
	FinishedAt *time.Time `json:"finishedAt"`
}

// judge records measures on the step and sets it passed or failed.
func (s *Step) judge(ms ...Measure) {
	s.Measures = ms
	if len(ms) > 0 {
		main := ms[len(ms)-1]
		s.Figure, s.Threshold, s.Unit = new(main.Figure), new(main.Threshold), main.Unit
	}
	var failed, words []string
	for _, m := range ms {
		words = append(words, m.Words())
		if !m.Passed {
			failed = append(failed, m.Words())
		}
	}
	if len(failed) > 0 {
		s.Status = StatusFailed
		s.Summary = "Failed: " + strings.Join(failed, "; ") + "."
		return
	}
	s.Status = StatusPassed
	s.Summary = "Passed: " + strings.Join(words, "; ") + "."
}

func atMost(name string, v, limit float64, unit string) Measure {
	return Measure{Name: name, Figure: v, Threshold: limit, Unit: unit, AtMost: true, Passed: v <= limit}
}

func atLeast(name string, v, limit float64, unit string) Measure {
	return Measure{Name: name, Figure: v, Threshold: limit, Unit: unit, Passed: v >= limit}
}

// Report is a run as the page, the API and the exports show it.
type Report struct {
	ID         int64      `json:"id"`
	Pool       string     `json:"pool"`
	Team       string     `json:"team"`
	Status     Status     `json:"status"`
	StartedBy  string     `json:"startedBy"`
	Namespace  string     `json:"namespace"`
	Job        string     `json:"job"`
	CreatedAt  time.Time  `json:"createdAt"`
	FinishedAt *time.Time `json:"finishedAt"`
	// Steps are the seven steps in order.
	Steps []Step `json:"steps"`
	// CostUSD is what the run's job cost (the ledger's rows); nil until known.
	CostUSD *money.USD `json:"costUsd"`
	// Cost is CostUSD to the cent, in words.
	Cost string `json:"cost"`
	// BaselineRatio is useful work per dollar against the baseline's; nil until step 7.
	BaselineRatio *float64 `json:"baselineRatio"`
	// Verdict is the run's outcome in one sentence.
	Verdict    string     `json:"verdict"`
	Definition Definition `json:"definition"`
}

// Passed reports whether every step passed or was skipped.
func (r Report) Passed() bool { return r.Status == StatusPassed }

// runState is what a run has measured and done so far, kept in the run's
// state column between steps.
type runState struct {
	Template          string     `json:"template,omitempty"`
	LaunchedAt        *time.Time `json:"launchedAt,omitempty"`
	AdmittedAt        *time.Time `json:"admittedAt,omitempty"`
	StepDeadline      *time.Time `json:"stepDeadline,omitempty"`
	DataPullSeconds   *float64   `json:"dataPullSeconds,omitempty"`
	BusBandwidth      *float64   `json:"busBandwidth,omitempty"`
	SamplesPerSecond  *float64   `json:"samplesPerSecond,omitempty"`
	CheckpointSeconds *float64   `json:"checkpointSeconds,omitempty"`
	CheckpointStep    int64      `json:"checkpointStep,omitempty"`
	// DeletedPod is the pod step 5 deletes, recorded before it is deleted.
	DeletedPod        string     `json:"deletedPod,omitempty"`
	DeletedPodUID     string     `json:"deletedPodUid,omitempty"`
	DeleteRequestedAt *time.Time `json:"deleteRequestedAt,omitempty"`
	DeleteDone        bool       `json:"deleteDone,omitempty"`
	ResumedAt         *time.Time `json:"resumedAt,omitempty"`
	ResumedStep       int64      `json:"resumedStep,omitempty"`
	RecoverySeconds   *float64   `json:"recoverySeconds,omitempty"`
	JobEndedAt        *time.Time `json:"jobEndedAt,omitempty"`
	BaselineRatio     *float64   `json:"baselineRatio,omitempty"`
}

// work is a run decoded for the runner.
type work struct {
	row   store.AcceptanceRun
	def   Definition
	state runState
	steps []Step
}

func decode(row store.AcceptanceRun) (*work, error) {
	w := &work{row: row}
	if err := json.Unmarshal(row.Definition, &w.def); err != nil {
		return nil, fmt.Errorf("acceptance run %d: decode definition: %w", row.ID, err)
	}
	if len(row.State) > 0 {
		if err := json.Unmarshal(row.State, &w.state); err != nil {
			return nil, fmt.Errorf("acceptance run %d: decode state: %w", row.ID, err)
		}
	}
	if len(row.Steps) > 0 {
		if err := json.Unmarshal(row.Steps, &w.steps); err != nil {
			return nil, fmt.Errorf("acceptance run %d: decode steps: %w", row.ID, err)
		}
	}
	if len(w.steps) != StepCount {
		w.steps = newSteps()
	}
	return w, nil
}

func (w *work) encode() (store.AcceptanceRun, error) {
	row := w.row
	var err error
	if row.State, err = json.Marshal(w.state); err != nil {
		return row, fmt.Errorf("acceptance run %d: encode state: %w", row.ID, err)
	}
	if row.Steps, err = json.Marshal(w.steps); err != nil {
		return row, fmt.Errorf("acceptance run %d: encode steps: %w", row.ID, err)
	}
	return row, nil
}

func newSteps() []Step {
	out := make([]Step, StepCount)
	for i := range out {
		out[i] = Step{Number: i + 1, Title: stepTitles[i], Status: StatusPending, Measures: []Measure{}}
	}
	return out
}

// ReportOf turns a stored run into its report.
func ReportOf(row store.AcceptanceRun) (Report, error) {
	w, err := decode(row)
	if err != nil {
		return Report{}, err
	}
	r := Report{
		ID: row.ID, Pool: row.Pool, Team: row.Team, Status: Status(row.Status), StartedBy: row.StartedBy,
		Namespace: row.Namespace, Job: row.JobName, CreatedAt: row.CreatedAt, FinishedAt: row.FinishedAt,
		Steps: w.steps, CostUSD: row.CostUSD, BaselineRatio: w.state.BaselineRatio, Definition: w.def,
	}
	if row.CostUSD != nil {
		r.Cost = row.CostUSD.String()
	}
	r.Verdict = verdict(r)
	return r, nil
}

func verdict(r Report) string {
	var failed []string
	for _, s := range r.Steps {
		if s.Status == StatusFailed {
			failed = append(failed, strconv.Itoa(s.Number))
		}
	}
	switch r.Status {
	case StatusRunning:
		for _, s := range r.Steps {
			if s.Status == StatusRunning || s.Status == StatusPending {
				return fmt.Sprintf("Running: step %d of %d, %s.", s.Number, StepCount, strings.ToLower(s.Title[:1])+s.Title[1:])
			}
		}
		return "Running."
	case StatusPassed:
		return fmt.Sprintf("Pool %s passed all %d steps of its acceptance test.", r.Pool, StepCount)
	}
	if len(failed) == 1 {
		return fmt.Sprintf("Pool %s failed step %s of its acceptance test.", r.Pool, failed[0])
	}
	return fmt.Sprintf("Pool %s failed steps %s of its acceptance test.", r.Pool, strings.Join(failed, ", "))
}

// Markdown is the report as a Markdown document.
func (r Report) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Acceptance run %d of pool %s\n\n", r.ID, r.Pool)
	fmt.Fprintf(&b, "%s\n\n", r.Verdict)
	fmt.Fprintf(&b, "- Started by %s at %s\n", r.StartedBy, r.CreatedAt.UTC().Format(time.RFC3339))
	if r.FinishedAt != nil {
		fmt.Fprintf(&b, "- Finished at %s\n", r.FinishedAt.UTC().Format(time.RFC3339))
	}
	fmt.Fprintf(&b, "- Team %s, job %s/%s, template %s, image %s\n", r.Team, r.Namespace, r.Job, r.Definition.Template, r.Definition.Image)
	if r.Cost != "" {
		fmt.Fprintf(&b, "- Cost of the run: %s\n", r.Cost)
	}
	b.WriteString("\n| # | Step | Status | Figure | Threshold | Result |\n|---|---|---|---|---|---|\n")
	for _, s := range r.Steps {
		fig, thr := "", ""
		if s.Figure != nil {
			fig = figure(*s.Figure, s.Unit)
		}
		if s.Threshold != nil {
			bound := "≥ "
			if len(s.Measures) > 0 && s.Measures[len(s.Measures)-1].AtMost {
				bound = "≤ "
			}
			thr = bound + figure(*s.Threshold, s.Unit)
		}
		fmt.Fprintf(&b, "| %d | %s | %s | %s | %s | %s |\n", s.Number, s.Title, s.Status, fig, thr, strings.ReplaceAll(s.Summary, "|", "\\|"))
	}
	return b.String()
}
