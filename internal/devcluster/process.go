package devcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Process is one long-running program of the local stack.
type Process struct {
	// Name identifies the process in the state file and names its log.
	Name string
	// Path is the program; Args its arguments (without Path).
	Path string
	Args []string
	// Env is added to the stack's own environment.
	Env []string
	// Dir is the working directory ("" = repository root).
	Dir string
	// RunAs is an unprivileged user to run as when the stack runs as root
	// (PostgreSQL refuses to run as root).
	RunAs string
}

// ProcessState is what the state file remembers of a started process.
type ProcessState struct {
	PID  int    `json:"pid"`
	Path string `json:"path"`
	// StartTicks is the process's start time in clock ticks since boot
	// (field 22 of /proc/PID/stat): with the PID it names one process for
	// ever, so a reused PID never passes for it.
	StartTicks uint64    `json:"startTicks,omitempty"`
	StartedAt  time.Time `json:"startedAt"`
	Log        string    `json:"log"`
	// exited is closed when a child this supervisor started has exited
	// (its Wait returned); nil for processes recorded by an earlier run.
	exited <-chan struct{}
}

// alive reports whether the recorded process still runs. A child of this
// supervisor is judged by its own exit, never by /proc (which reads empty
// while the kernel still maps a freshly exec'd binary); a process from an
// earlier run by its PID and start time, which cannot race.
func (p ProcessState) alive() bool {
	if p.exited != nil {
		select {
		case <-p.exited:
			return false
		default:
			return true
		}
	}
	if p.PID <= 0 {
		return false
	}
	st, err := readProcStat(p.PID)
	if err != nil || st.zombie() {
		return false
	}
	if p.StartTicks != 0 {
		return st.startTicks == p.StartTicks
	}
	// State files written before start times were recorded: the process
	// must have started when the state says it did (a reused PID started
	// later). Never /proc/PID/cmdline, which reads empty during an exec.
	started, err := bootTime()
	if err != nil {
		return false
	}
	started = started.Add(time.Duration(st.startTicks) * time.Second / clockTicksPerSecond)
	return absDuration(started.Sub(p.StartedAt)) < 2*time.Second
}

// clockTicksPerSecond is the unit of /proc/PID/stat's start time (USER_HZ,
// 100 on every Linux architecture the stack runs on).
const clockTicksPerSecond = 100

// bootTime is when the machine booted (btime in /proc/stat).
func bootTime() (time.Time, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return time.Time{}, fmt.Errorf("read boot time: %w", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "btime "); ok {
			sec, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return time.Time{}, fmt.Errorf("parse boot time: %w", err)
			}
			return time.Unix(sec, 0), nil
		}
	}
	return time.Time{}, errors.New("no btime in /proc/stat")
}

func absDuration(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// procStat is what the supervisor reads of /proc/PID/stat.
type procStat struct {
	state      byte
	pgid       int
	startTicks uint64
}

// zombie reports a process that has exited but is not reaped yet.
func (s procStat) zombie() bool { return s.state == 'Z' || s.state == 'X' }

func readProcStat(pid int) (procStat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, fmt.Errorf("read stat of pid %d: %w", pid, err)
	}
	// The command name (field 2) may hold spaces and parentheses: the
	// fields that follow start after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("stat of pid %d: no command name", pid)
	}
	fields := strings.Fields(string(b[i+1:]))
	// fields[0] is field 3 (state), fields[2] field 5 (pgrp), fields[19]
	// field 22 (starttime).
	if len(fields) < 20 {
		return procStat{}, fmt.Errorf("stat of pid %d: %d fields", pid, len(fields))
	}
	pgid, err := strconv.Atoi(fields[2])
	if err != nil {
		return procStat{}, fmt.Errorf("stat of pid %d: pgrp: %w", pid, err)
	}
	start, err := strconv.ParseUint(fields[19], 10, 64)
	if err != nil {
		return procStat{}, fmt.Errorf("stat of pid %d: starttime: %w", pid, err)
	}
	return procStat{state: fields[0][0], pgid: pgid, startTicks: start}, nil
}

// groupMembers lists the live processes of process group pgid.
func groupMembers(pgid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := readProcStat(pid)
		if err != nil || st.zombie() || st.pgid != pgid {
			continue
		}
		pids = append(pids, pid)
	}
	return pids
}

// startMarker begins the line a process' log gets at each start.
const startMarker = "==== "

// startProcess starts p detached from the caller (own process group, so a
// terminal's Ctrl-C reaches only the supervisor, which stops things in
// order), with stdout and stderr appended to its log file.
func (s *Stack) startProcess(p Process) (ProcessState, error) {
	logPath := s.layout.LogFile(p.Name)
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return ProcessState{}, fmt.Errorf("start %s: open log: %w", p.Name, err)
	}
	defer logFile.Close()
	fmt.Fprintf(logFile, "\n%s%s starting %s %v\n", startMarker, time.Now().Format(time.RFC3339), p.Path, p.Args)

	if s.tamper != nil {
		s.tamper(&p)
	}
	cmd := exec.Command(p.Path, p.Args...)
	cmd.Dir = p.Dir
	if cmd.Dir == "" {
		cmd.Dir = s.layout.Root
	}
	cmd.Env = append(os.Environ(), p.Env...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if p.RunAs != "" && os.Geteuid() == 0 {
		cred, err := credentialOf(p.RunAs)
		if err != nil {
			return ProcessState{}, fmt.Errorf("start %s: %w", p.Name, err)
		}
		cmd.SysProcAttr.Credential = cred
	}
	if err := cmd.Start(); err != nil {
		return ProcessState{}, fmt.Errorf("start %s: %w", p.Name, err)
	}
	ps := ProcessState{PID: cmd.Process.Pid, Path: p.Path, StartedAt: time.Now().UTC(), Log: logPath}
	// The child cannot have been reaped yet (only the goroutine below
	// waits for it), so its stat is readable even if it already exited.
	if st, err := readProcStat(ps.PID); err == nil {
		ps.StartTicks = st.startTicks
	}
	exited := make(chan struct{})
	ps.exited = exited
	// Reap the child when it exits so it never lingers as a zombie while
	// the supervisor lives; the state file keeps the PID for later runs.
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	return ps, nil
}

func credentialOf(name string) (*syscall.Credential, error) {
	u, err := user.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("look up user %s: %w", name, err)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("uid of %s: %w", name, err)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("gid of %s: %w", name, err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// stopProcess sends SIGTERM to the process group, waits up to grace for its
// leader to exit, then SIGKILLs the group; it returns once no process of
// the group is left (children such as PostgreSQL's backends included). A
// process that is already gone is not an error.
func stopProcess(ctx context.Context, name string, p ProcessState, grace time.Duration) error {
	return shutDownProcess(ctx, name, p, 0, grace)
}

// shutDownProcess is stopProcess asking with signal sig sent to the process
// alone (a program's own orderly shutdown, such as PostgreSQL's fast
// shutdown on SIGINT); sig 0 is SIGTERM to the group.
func shutDownProcess(ctx context.Context, name string, p ProcessState, sig syscall.Signal, grace time.Duration) error {
	if p.PID <= 0 {
		return nil
	}
	if p.alive() {
		if sig != 0 {
			_ = syscall.Kill(p.PID, sig)
		} else if err := syscall.Kill(-p.PID, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
			_ = syscall.Kill(p.PID, syscall.SIGTERM)
		}
		deadline := time.Now().Add(grace)
		for p.alive() && time.Now().Before(deadline) {
			select {
			case <-ctx.Done():
				return fmt.Errorf("stop %s: %w", name, ctx.Err())
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	if !p.ownsGroup() {
		return nil
	}
	for i := 0; i < 100; i++ {
		if len(groupMembers(p.PID)) == 0 && !p.alive() {
			return nil
		}
		_ = syscall.Kill(-p.PID, syscall.SIGKILL)
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("stop %s: process group %d survived SIGKILL: pids %v", name, p.PID, groupMembers(p.PID))
}

// ownsGroup reports whether process group p.PID is still the one p leads:
// the leader lives on as p, or is gone (a group ID is never reused while
// the group has members, so what is left of it is p's).
func (p ProcessState) ownsGroup() bool {
	if p.alive() {
		return true
	}
	st, err := readProcStat(p.PID)
	if err != nil || st.zombie() {
		return true
	}
	// Another process now has p's PID, so p's group had ended before the
	// PID was reused: killing that group would hit a stranger.
	return false
}

// waitFor polls check until it succeeds, the timeout passes or the process
// it depends on dies (then the log tail explains why).
func waitFor(ctx context.Context, what string, timeout time.Duration, proc *ProcessState, check func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		cctx, ccancel := context.WithTimeout(ctx, 5*time.Second)
		last = check(cctx)
		ccancel()
		if last == nil {
			return nil
		}
		if proc != nil && !proc.alive() {
			msg := fmt.Sprintf("%s: process exited (%v)", what, last)
			if cause := exitCause(proc.Log); cause != "" {
				msg += "\n  cause: " + cause
			}
			return fmt.Errorf("%s; last log lines:\n%s", msg, tailFile(proc.Log, 20))
		}
		select {
		case <-ctx.Done():
			msg := fmt.Sprintf("%s: not ready after %s: %v", what, timeout, last)
			if proc != nil {
				msg += "\nlast log lines:\n" + tailFile(proc.Log, 20)
			}
			return errors.New(msg)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// explaining matches log lines that say why a program stopped.
var explaining = regexp.MustCompile(`(?i)error|fatal|panic|failed|unknown|not defined|invalid|already in use|no such file|permission denied|cannot|could not`)

// ansiEscape matches terminal colour codes some programs write to logs.
var ansiEscape = regexp.MustCompile(`\x1b\[[0-9;]*m`)

// exitCause is the first line of the latest start's log that explains an
// exit (a usage text can bury it far above the last lines), or "".
func exitCause(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	if i := bytes.LastIndex(b, []byte(startMarker)); i >= 0 {
		b = b[i:]
		if j := bytes.IndexByte(b, '\n'); j >= 0 {
			b = b[j+1:]
		}
	}
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(ansiEscape.ReplaceAllString(line, ""))
		if line != "" && explaining.MatchString(line) {
			const max = 400
			if len(line) > max {
				line = line[:max] + "…"
			}
			return line
		}
	}
	return ""
}

func tailFile(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

func sysProcAttrWithCredential(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: cred}
}
