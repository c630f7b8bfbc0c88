// Package acceptance runs the field guide's pool acceptance test: an admin
// defines per pool what to launch and the pass thresholds, an admin or the
// pool team's lead starts a run, and a loop on the leading replica drives
// it through seven steps, reading the workload's reports from its logs
// (protocol.go) and writing every step's result to Postgres as it goes.
package acceptance

import (
	"fmt"
	"strings"
	"time"

	"github.com/gantry-dev/gantry/internal/money"
	"github.com/gantry-dev/gantry/internal/problem"
	"github.com/gantry-dev/gantry/internal/store"
)

// Definition is what a pool's acceptance run launches and how it is judged.
type Definition struct {
	Pool string `json:"pool"`
	// Team is the team whose namespace and quota the run uses; its lead may start runs.
	Team string `json:"team"`
	// Template is the production template; Image the image it must run.
	Template string `json:"template"`
	Image    string `json:"image"`
	GPUs     int    `json:"gpus"`
	Nodes    int    `json:"nodes"`
	// Dataset is the template's dataset choice; Weights the base model weights' URI.
	Dataset string `json:"dataset"`
	Weights string `json:"weights"`
	// TrainingWindowSeconds is how long the workload trains before it checkpoints.
	TrainingWindowSeconds int  `json:"trainingWindowSeconds"`
	Benchmark             bool `json:"benchmark"`
	// Thresholds.
	MaxQueueWaitSeconds       float64 `json:"maxQueueWaitSeconds"`
	MaxDataPullSeconds        float64 `json:"maxDataPullSeconds"`
	MinBusBandwidthGBps       float64 `json:"minBusBandwidthGBps"`
	MaxCheckpointWriteSeconds float64 `json:"maxCheckpointWriteSeconds"`
	MaxRecoverySeconds        float64 `json:"maxRecoverySeconds"`
	MinSamplesPerSecond       float64 `json:"minSamplesPerSecond"`
	// BaselineLabel names the baseline ("GPU rental", "model API");
	// BaselineUSDPerMillionSamples is what a million samples cost there.
	BaselineLabel                string    `json:"baselineLabel"`
	BaselineUSDPerMillionSamples money.USD `json:"baselineUsdPerMillionSamples"`
	// MinBaselineRatio is the least useful work per dollar, as a multiple
	// of the baseline's, that passes step 7.
	MinBaselineRatio float64   `json:"minBaselineRatio"`
	UpdatedBy        string    `json:"updatedBy,omitempty"`
	UpdatedAt        time.Time `json:"updatedAt,omitzero"`
}

// Validate checks a definition's fields, in words per field.
func (d Definition) Validate() problem.Fields {
	errs := problem.Fields{}
	req := func(field, v, words string) {
		if strings.TrimSpace(v) == "" {
			errs[field] = words
		}
	}
	req("pool", d.Pool, "Name the pool.")
	req("team", d.Team, "Name the team whose quota the run uses.")
	req("template", d.Template, "Name the production template.")
	req("image", d.Image, "Name the production image.")
	req("baselineLabel", d.BaselineLabel, "Name the baseline (GPU rental, model API).")
	if d.GPUs < 1 {
		errs["gpus"] = "At least one GPU per node."
	}
	if d.Nodes < 1 {
		errs["nodes"] = "At least one node."
	}
	if d.TrainingWindowSeconds < 1 {
		errs["trainingWindowSeconds"] = "The training window is at least one second."
	}
	pos := func(field string, v float64, words string) {
		if !(v > 0) {
			errs[field] = words
		}
	}
	pos("maxQueueWaitSeconds", d.MaxQueueWaitSeconds, "The longest queue wait must be more than zero seconds.")
	pos("maxDataPullSeconds", d.MaxDataPullSeconds, "The slowest data pull must be more than zero seconds.")
	pos("maxCheckpointWriteSeconds", d.MaxCheckpointWriteSeconds, "The longest checkpoint write must be more than zero seconds.")
	pos("maxRecoverySeconds", d.MaxRecoverySeconds, "The longest recovery must be more than zero seconds.")
	if d.MinBusBandwidthGBps < 0 {
		errs["minBusBandwidthGBps"] = "The lowest bus bandwidth cannot be negative."
	}
	if d.MinSamplesPerSecond < 0 {
		errs["minSamplesPerSecond"] = "The lowest throughput cannot be negative."
	}
	if d.BaselineUSDPerMillionSamples <= 0 {
		errs["baselineUsdPerMillionSamples"] = "The baseline price must be more than $0."
	}
	if d.MinBaselineRatio < 0 {
		errs["minBaselineRatio"] = "The least ratio to the baseline cannot be negative."
	}
	if len(errs) == 0 {
		return nil
	}
	return errs
}

func definitionFromStore(s store.AcceptanceDefinition) Definition {
	return Definition{
		Pool: s.Pool, Team: s.Team, Template: s.Template, Image: s.Image, GPUs: s.GPUs, Nodes: s.Nodes,
		Dataset: s.Dataset, Weights: s.Weights, TrainingWindowSeconds: s.TrainingWindowSeconds, Benchmark: s.Benchmark,
		MaxQueueWaitSeconds: s.MaxQueueWaitSeconds, MaxDataPullSeconds: s.MaxDataPullSeconds, MinBusBandwidthGBps: s.MinBusBandwidthGbps,
		MaxCheckpointWriteSeconds: s.MaxCheckpointWriteSeconds, MaxRecoverySeconds: s.MaxRecoverySeconds, MinSamplesPerSecond: s.MinSamplesPerSecond,
		BaselineLabel: s.BaselineLabel, BaselineUSDPerMillionSamples: s.BaselineUSDPerMillionSamples, MinBaselineRatio: s.MinBaselineRatio,
		UpdatedBy: s.UpdatedBy, UpdatedAt: s.UpdatedAt,
	}
}

func (d Definition) toStore() store.AcceptanceDefinition {
	return store.AcceptanceDefinition{
		Pool: d.Pool, Team: d.Team, Template: d.Template, Image: d.Image, GPUs: d.GPUs, Nodes: d.Nodes,
		Dataset: d.Dataset, Weights: d.Weights, TrainingWindowSeconds: d.TrainingWindowSeconds, Benchmark: d.Benchmark,
		MaxQueueWaitSeconds: d.MaxQueueWaitSeconds, MaxDataPullSeconds: d.MaxDataPullSeconds, MinBusBandwidthGbps: d.MinBusBandwidthGBps,
		MaxCheckpointWriteSeconds: d.MaxCheckpointWriteSeconds, MaxRecoverySeconds: d.MaxRecoverySeconds, MinSamplesPerSecond: d.MinSamplesPerSecond,
		BaselineLabel: d.BaselineLabel, BaselineUSDPerMillionSamples: d.BaselineUSDPerMillionSamples, MinBaselineRatio: d.MinBaselineRatio,
		UpdatedBy: d.UpdatedBy, UpdatedAt: d.UpdatedAt,
	}
}

// Args is the argument line the run gives the workload: the template's
// arguments with the acceptance flags the reference script
// (deploy/acceptance/train.py) reads appended.
func (d Definition) Args(templateArgs string) string {
	parts := []string{strings.TrimSpace(templateArgs), "--gantry-acceptance",
		fmt.Sprintf("--window-seconds=%d", d.TrainingWindowSeconds)}
	if d.Weights != "" {
		parts = append(parts, "--weights="+d.Weights)
	}
	if d.Benchmark && d.Nodes > 1 {
		parts = append(parts, "--all-reduce-benchmark")
	}
	return strings.TrimSpace(strings.Join(parts, " "))
}

type fieldErrors map[string]string

func (f fieldErrors) err() error { return problem.Fields(f) }
