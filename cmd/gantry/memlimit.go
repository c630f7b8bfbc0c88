package main

import (
	"debug/elf"
	"fmt"
	"os"

	"github.com/KimMachineGun/automemlimit/memlimit"
)

// lessExecutable is the container's memory limit (from limit) less the
// executable's mapped size: the cgroup charges the binary's resident pages
// beside what the runtime allocates, and GOMEMLIMIT bounds only the latter.
// The portal's binary maps about 75 MiB (text, read-only data and the
// pcln table), 60-62 MiB of it resident under load; at 10,000 workloads 90%
// of a 200 MiB limit let the resident set reach 241 MiB, and 130 MiB kept
// it at 188-190 (README, Performance). At most half the limit is set
// aside; no limit stays no limit.
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
