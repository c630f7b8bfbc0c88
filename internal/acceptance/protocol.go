package acceptance

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Kinds of events a workload reports with one JSON line on stdout
// ({"gantry":"data-pulled","seconds":12.5}); deploy/acceptance/README.md
// documents them.
const (
	EventDataPulled        = "data-pulled"
	EventCheckpointWritten = "checkpoint-written"
	EventResumed           = "resumed"
	EventThroughput        = "throughput"
	// EventBusBandwidth is not a JSON event: it comes from the line
	// nccl-tests' all_reduce_perf prints, "# Avg bus bandwidth    : 183.2".
	EventBusBandwidth = "bus-bandwidth"
)

// Event is one report of a workload, from one line of its log.
type Event struct {
	Kind string
	// Seconds is how long a data pull or checkpoint write took.
	Seconds float64
	// Step is the training step a checkpoint holds or a resume started from.
	Step int64
	// SamplesPerSecond is a throughput report.
	SamplesPerSecond float64
	// BusBandwidth is nccl-tests' average bus bandwidth in GB/s.
	BusBandwidth float64
	// At is when the line was written, from the log's timestamp; zero
	// when the log was read without timestamps.
	At time.Time
}

// wireEvent is the JSON form of an event line.
type wireEvent struct {
	Gantry           string   `json:"gantry"`
	Seconds          *float64 `json:"seconds"`
	Step             *int64   `json:"step"`
	SamplesPerSecond *float64 `json:"samples_per_second"`
}

// busBandwidthLine is nccl-tests' summary line (all_reduce_perf and the
// other collectives print it at the end of a run).
var busBandwidthLine = regexp.MustCompile(`^#\s*Avg bus bandwidth\s*:\s*([0-9]+(?:\.[0-9]+)?)`)

// ParseLine reads one log line as an event. A line may start with the
// RFC 3339 timestamp the logs API adds (timestamps=true). Lines that are
// not events (the training script's own output) give false.
func ParseLine(line string) (Event, bool) {
	line = strings.TrimRight(line, "\r\n")
	var at time.Time
	if ts, rest, ok := strings.Cut(line, " "); ok {
		if t, err := time.Parse(time.RFC3339Nano, ts); err == nil {
			at, line = t, rest
		}
	}
	trimmed := strings.TrimSpace(line)
	if m := busBandwidthLine.FindStringSubmatch(trimmed); m != nil {
		v, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			return Event{}, false
		}
		return Event{Kind: EventBusBandwidth, BusBandwidth: v, At: at}, true
	}
	if !strings.HasPrefix(trimmed, "{") || !strings.Contains(trimmed, `"gantry"`) {
		return Event{}, false
	}
	var w wireEvent
	if err := json.Unmarshal([]byte(trimmed), &w); err != nil || w.Gantry == "" {
		return Event{}, false
	}
	e := Event{Kind: w.Gantry, At: at}
	switch w.Gantry {
	case EventDataPulled, EventCheckpointWritten:
		if w.Seconds == nil || *w.Seconds < 0 {
			return Event{}, false
		}
		e.Seconds = *w.Seconds
		if w.Step != nil {
			e.Step = *w.Step
		}
	case EventResumed:
		if w.Step != nil {
			e.Step = *w.Step
		}
	case EventThroughput:
		if w.SamplesPerSecond == nil || *w.SamplesPerSecond < 0 {
			return Event{}, false
		}
		e.SamplesPerSecond = *w.SamplesPerSecond
	default:
		return Event{}, false
	}
	return e, true
}

// ParseLog reads every event of a log, in order.
func ParseLog(text string) []Event {
	var out []Event
	for line := range strings.SplitSeq(text, "\n") {
		if e, ok := ParseLine(line); ok {
			out = append(out, e)
		}
	}
	return out
}
