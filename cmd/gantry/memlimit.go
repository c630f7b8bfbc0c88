package main

import (
	"debug/elf"
	"fmt"
	"os"
	"runtime/debug"

	"github.com/KimMachineGun/automemlimit/memlimit"
)

// lessExecutable is the container's memory limit (from limit) less the
// executable's mapped size: the cgroup charges the binary's resident pages
// beside what the runtime allocates, and GOMEMLIMIT bounds only the latter.
// The portal's binary maps about 45 MiB (text, read-only data and the
// pcln table), 40 MiB of it resident at 10,000 workloads (76 and 59-71
// before the linker's dead code elimination was on, 48d28fc); with that
// larger binary 90% of a 200 MiB limit let the resident set reach 241 MiB,
// and 130 MiB kept it at 188-190 (README, Performance). At most half the
// limit is set aside; no limit stays no limit.
func lessExecutable(limit memlimit.Provider, mapped func() (uint64, error)) memlimit.Provider {
	return func() (uint64, error) {
		l, err := limit()
		if err != nil {
			return 0, err
		}
		exe, err := mapped()
		if err != nil {
			return 0, err
		}
		return l - min(exe, l/2), nil
	}
}

// executableMapped is the file-backed size of the running executable's
// loadable segments, the part of it the process maps.
func executableMapped() (uint64, error) {
	path, err := os.Executable()
	if err != nil {
		return 0, fmt.Errorf("find the executable: %w", err)
	}
	f, err := elf.Open(path)
	if err != nil {
		return 0, fmt.Errorf("read the executable's segments: %w", err)
	}
	defer f.Close()
	var n uint64
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD {
			n += p.Filesz
		}
	}
	return n, nil
}

// defaultGCPercent is the collector's pace unless GOGC sets it: a
// collection starts when the heap has grown by half of what was live after
// the last, not by all of it (Go's default, 100). Most of the portal's live
// heap is its caches, which live as long as it does (about 50 of 58 MiB at
// 10,000 workloads), so at 100 the heap doubled them between collections
// and, without a memory limit, the resident set settled at 210-227 MiB in
// the load runs. Prometheus paces its collector below Go's default (75
// since 2.53) for the same reason. The cost is collections twice as often:
// GC CPU per view and RSS for both paces are in README, Performance.
const defaultGCPercent = 50

// paceCollector sets the collector's pace to defaultGCPercent unless
// GOGC is set (the runtime has applied it); it reports whether it did.
func paceCollector(lookup func(string) (string, bool)) bool {
	if _, set := lookup("GOGC"); set {
		return false
	}
	debug.SetGCPercent(defaultGCPercent)
	return true
}
