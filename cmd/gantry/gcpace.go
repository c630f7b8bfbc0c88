package main

import (
	"context"
	"log/slog"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// minHeadroom is the least the heap grows between two collections. At
// defaultGCPercent a small portal's heap (14-23 MiB live at 1,000
// workloads) grew by 7-11 MiB between collections: the collector ran
// 0.4-1.0 times a second while users clicked, and on the 2-core load run
// 13 and 17 of the job list's 20 slowest views came while it ran (its mark
// assists and stops on cores the simulated cluster kept busy), though it
// ran for 0.6-2.1% of the time. With room for 32 MiB the same load
// collected 0.10-0.19 times a second in two runs, and 1-9 of each phase's
// 20 slowest views met one (e2e/LOAD-RUNS.md, 2026-12-08). At 10,000 workloads (50-69 MiB live) half
// of what is live is about this much already.
const minHeadroom = 32 << 20

// pacedPercent is the pace that lets the heap grow by half of live (the
// default pace) or by minHeadroom, whichever is more.
func pacedPercent(live uint64) int {
	live = max(live, 1<<20)
	return max(defaultGCPercent, int((minHeadroom*100+live-1)/live))
}

// paceInterval is how often the pacer reads the live heap: collections
// come no more than every few seconds once it has set the pace.
const paceInterval = time.Second

// pace keeps the collector's pace at pacedPercent of the heap that was
// live after the last collection, until ctx ends. GOMEMLIMIT (or the
// container's limit) still bounds the heap whatever the pace.
func pace(ctx context.Context, log *slog.Logger) {
	samples := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/gc/cycles/total:gc-cycles"}}
	var cycles uint64
	current := defaultGCPercent
	tick := time.NewTicker(paceInterval)
	defer tick.Stop()
	for {
		metrics.Read(samples)
		if c := samples[1].Value.Uint64(); c != cycles {
			cycles = c
			if p := pacedPercent(samples[0].Value.Uint64()); p != current {
				debug.SetGCPercent(p)
				log.Debug("collector paced", "gc_percent", p, "live_bytes", samples[0].Value.Uint64())
				current = p
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
