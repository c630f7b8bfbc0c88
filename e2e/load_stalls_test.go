package e2e

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// stallSampleEvery is how often a page's load reads every process's CPU
// time and major faults and the machine's CPU and IO pressure: often
// enough to tell which process ran in a second in which several views
// stalled, rarely enough that the reading (every /proc/PID/stat) costs
// about 1% of a core.
const stallSampleEvery = 500 * time.Millisecond

// cpuSample is every process's CPU time and major faults and the
// machine's CPU and IO pressure at one moment of a page's load.
type cpuSample struct {
	at    time.Time
	procs map[int]procTicks
	// waited is the time, so far, in which at least one runnable thread
	// waited for a core (/proc/pressure/cpu, "some"); zero where the
	// kernel does not keep it.
	waited time.Duration
	// ioWaited is the time, so far, in which at least one thread waited
	// for the disk (/proc/pressure/io, "some"); zero likewise.
	ioWaited time.Duration
}

// sampleCPU reads a cpuSample every stallSampleEvery until stop, which
// returns them.
func sampleCPU(ctx context.Context) (stop func() []cpuSample) {
	ctx, cancel := context.WithCancel(ctx)
	var (
		mu      sync.Mutex
		samples []cpuSample
		done    = make(chan struct{})
	)
	take := func() {
		procs, err := processCPU()
		if err != nil {
			return
		}
		mu.Lock()
		samples = append(samples, cpuSample{at: time.Now(), procs: procs, waited: pressure("cpu"), ioWaited: pressure("io")})
		mu.Unlock()
	}
	go func() {
		defer close(done)
		t := time.NewTicker(stallSampleEvery)
		defer t.Stop()
		take()
		for {
			select {
			case <-ctx.Done():
				take()
				return
			case <-t.C:
				take()
			}
		}
	}()
	return func() []cpuSample {
		cancel()
		<-done
		mu.Lock()
		defer mu.Unlock()
		return samples
	}
}

// pressure is the kernel's count of time in which some thread waited for
// resource ("cpu": a core, "io": the disk); zero when it cannot be read.
func pressure(resource string) time.Duration {
	raw, err := os.ReadFile("/proc/pressure/" + resource)
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(raw), "\n")
	for _, f := range strings.Fields(line) {
		if v, ok := strings.CutPrefix(f, "total="); ok {
			us, err := strconv.ParseInt(v, 10, 64)
			if err == nil {
				return time.Duration(us) * time.Microsecond
			}
		}
	}
	return 0
}

// stalls describes, for each of the slowest views (at most top), the
// samples around it: how long the window was, for what share of it some
// thread waited for a core and for the disk, the processes that used the
// most CPU in it, how long the view's own processes (onViewPath) waited
// for a core, and those that read pages from disk. A view that waited
// on PostgreSQL while PostgreSQL logged nothing slow waited somewhere:
// this says whether for a core, and who had them, or for the disk.
func stalls(samples []cpuSample, lat []time.Duration, timings []viewTiming, top int) []string {
	var out []string
	for _, i := range slowestOrder(lat)[:min(top, len(lat))] {
		start, end := timings[i].at, timings[i].at.Add(lat[i])
		first, last := -1, -1
		for j, s := range samples {
			if !s.at.After(start) {
				first = j
			}
			if last < 0 && !s.at.Before(end) {
				last = j
			}
		}
		if first < 0 || last < 0 || last <= first {
			continue
		}
		a, b := samples[first], samples[last]
		window := b.at.Sub(a.at)
		waited := 100 * (b.waited - a.waited).Seconds() / window.Seconds()
		ioWaited := 100 * (b.ioWaited - a.ioWaited).Seconds() / window.Seconds()
		out = append(out, fmt.Sprintf("at=%s ms=%.0f window_ms=%.0f cpu_wait_pct=%.0f io_wait_pct=%.0f busiest=%q run_delay_ms=%q major_faults=%q",
			start.UTC().Format(tailClock), ms(lat[i]), ms(window), waited, ioWaited, busiest(a.procs, b.procs, window, 5),
			delayed(a.procs, b.procs), faulted(a.procs, b.procs, 3)))
	}
	return out
}
