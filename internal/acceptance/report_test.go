package acceptance

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gantry-dev/gantry/internal/money"
)

func TestMeasureWords(t *testing.T) {
	cases := map[string]struct {
		m    Measure
		want string
	}{
		"seconds at most":    {atMost("checkpoint write", 41.2, 30, "s"), "checkpoint write 41.2 s, at most 30 s allowed"},
		"bandwidth":          {atLeast("all-reduce bus bandwidth", 183.2, 150, "GB/s"), "all-reduce bus bandwidth 183.2 GB/s, at least 150 GB/s allowed"},
		"ratio":              {atLeast("useful work per dollar", 1.7, 1, "×"), "useful work per dollar 1.7×, at least 1× allowed"},
		"rounded to 2 dp":    {atMost("recovery", 11.91234, 90, "s"), "recovery 11.91 s, at most 90 s allowed"},
		"count without unit": {atMost("objects without labels", 0, 0, ""), "objects without labels 0, at most 0 allowed"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := tc.m.Words(); got != tc.want {
				t.Errorf("Words() = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestJudgeFailsWithFigureAndThresholdInWords(t *testing.T) {
	s := Step{Number: 5, Status: StatusRunning}
	s.judge(atMost("checkpoint write", 41.2, 30, "s"), atMost("recovery after deleting a pod", 4.5, 90, "s"))
	if s.Status != StatusFailed {
		t.Fatalf("status %s, want failed", s.Status)
	}
	if want := "Failed: checkpoint write 41.2 s, at most 30 s allowed."; s.Summary != want {
		t.Errorf("summary %q, want %q", s.Summary, want)
	}
	if *s.Figure != 4.5 || *s.Threshold != 90 || s.Unit != "s" {
		t.Errorf("main figure %v/%v %s, want the last measure's 4.5/90 s", *s.Figure, *s.Threshold, s.Unit)
	}
}

func TestCostPerMillionSamples(t *testing.T) {
	cases := map[string]struct {
		price money.USD
		gpus  int64
		sps   float64
		want  money.USD
	}{
		"two H100 at $4, 2400/s": {4 * money.Dollar, 2, 2400, 925_926},
		"one L40S at $1.20":      {1_200_000, 1, 2400, 138_889},
		"exact":                  {3600 * money.Dollar, 1, 1_000_000, 1_000_000},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := CostPerMillionSamples(tc.price, tc.gpus, tc.sps); got != tc.want {
				t.Errorf("CostPerMillionSamples = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestDefinitionValidateSaysWhatIsWrong(t *testing.T) {
	d := Definition{Pool: "h100-sxm-ib-training", Team: "vision", Template: "pytorch-multinode", Image: "nvcr.io/nvidia/pytorch:24.12-py3",
		GPUs: 0, Nodes: 2, TrainingWindowSeconds: 600, MaxQueueWaitSeconds: 60, MaxDataPullSeconds: 60, MaxCheckpointWriteSeconds: 60,
		MaxRecoverySeconds: -1, BaselineLabel: "GPU rental"}
	got := map[string]string(d.Validate())
	want := map[string]string{
		"gpus":                         "At least one GPU per node.",
		"maxRecoverySeconds":           "The longest recovery must be more than zero seconds.",
		"baselineUsdPerMillionSamples": "The baseline price must be more than $0.",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Validate (-want +got):\n%s", diff)
	}
}

func TestMarkdownListsTheSevenStepsInOrder(t *testing.T) {
	steps := newSteps()
	steps[0].judge(atMost("queue wait", 3, 600, "s"))
	r := Report{ID: 7, Pool: "h100-sxm-ib-training", Status: StatusRunning, Steps: steps, StartedBy: "erin", Cost: "$0.09"}
	r.Verdict = verdict(r)
	md := r.Markdown()
	if want := "Running: step 2 of 7, pull the dataset sample and base model weights."; r.Verdict != want {
		t.Errorf("verdict %q, want %q", r.Verdict, want)
	}
	rows := 0
	for line := range strings.SplitSeq(md, "\n") {
		if strings.HasPrefix(line, "| ") && !strings.HasPrefix(line, "| #") {
			rows++
		}
	}
	if rows != StepCount {
		t.Errorf("%d step rows, want %d:\n%s", rows, StepCount, md)
	}
	for _, want := range []string{
		"| 1 | Submit a queued training job with the production container | passed | 3 s | ≤ 600 s | Passed: queue wait 3 s, at most 600 s allowed. |",
		"| 7 | Compare useful work against the baseline | pending |  |  |  |",
		"- Cost of the run: $0.09",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
}
