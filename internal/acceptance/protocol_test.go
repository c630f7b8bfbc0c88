package acceptance

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseLine(t *testing.T) {
	at := time.Date(2026, 11, 30, 20, 1, 2, 500_000_000, time.UTC)
	cases := map[string]struct {
		line string
		want Event
		ok   bool
	}{
		"data pulled":         {line: `{"gantry":"data-pulled","seconds":12.5}`, want: Event{Kind: EventDataPulled, Seconds: 12.5}, ok: true},
		"checkpoint written":  {line: `{"gantry":"checkpoint-written","seconds":41.2,"step":1200}`, want: Event{Kind: EventCheckpointWritten, Seconds: 41.2, Step: 1200}, ok: true},
		"resumed":             {line: `{"gantry":"resumed","step":1200}`, want: Event{Kind: EventResumed, Step: 1200}, ok: true},
		"throughput":          {line: `{"gantry":"throughput","samples_per_second":2400.5}`, want: Event{Kind: EventThroughput, SamplesPerSecond: 2400.5}, ok: true},
		"with log timestamp":  {line: "2026-11-30T20:01:02.5Z " + `{"gantry":"resumed","step":7}`, want: Event{Kind: EventResumed, Step: 7, At: at}, ok: true},
		"nccl-tests summary":  {line: "# Avg bus bandwidth    : 183.2 ", want: Event{Kind: EventBusBandwidth, BusBandwidth: 183.2}, ok: true},
		"nccl with timestamp": {line: "2026-11-30T20:01:02.5Z # Avg bus bandwidth    : 96", want: Event{Kind: EventBusBandwidth, BusBandwidth: 96, At: at}, ok: true},
		"nccl table row":      {line: "   8388608   2097152  float  sum  -1  1219.1  6.88  12.04  0", ok: false},
		"training output":     {line: "epoch 1 loss 2.31", ok: false},
		"unknown event":       {line: `{"gantry":"lunch","seconds":3}`, ok: false},
		"missing figure":      {line: `{"gantry":"data-pulled"}`, ok: false},
		"negative seconds":    {line: `{"gantry":"checkpoint-written","seconds":-1}`, ok: false},
		"other json":          {line: `{"level":"info","msg":"hello"}`, ok: false},
		"broken json":         {line: `{"gantry":"resumed",`, ok: false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, ok := ParseLine(tc.line)
			if ok != tc.ok {
				t.Fatalf("ParseLine(%q) ok = %v, want %v", tc.line, ok, tc.ok)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ParseLine(%q) (-want +got):\n%s", tc.line, diff)
			}
		})
	}
}
