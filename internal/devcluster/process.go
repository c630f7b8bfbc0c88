package devcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"strconv"
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
	PID       int       `json:"pid"`
	Path      string    `json:"path"`
	StartedAt time.Time `json:"startedAt"`
	Log       string    `json:"log"`
}

// alive reports whether the recorded process still runs the same program
// (a reused PID running something else does not count).
func (p ProcessState) alive() bool {
	if p.PID <= 0 {
		return false
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p.PID))
	if err != nil {
		return false
	}
	argv0, _, _ := bytes.Cut(cmdline, []byte{0})
	if string(argv0) != p.Path {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.PID))
	if err != nil {
		return false
	}
	// A zombie (state Z) has exited; its parent just has not reaped it.
	if i := bytes.LastIndexByte(stat, ')'); i > 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
		return false
	}
	return true
}

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
	fmt.Fprintf(logFile, "\n==== %s starting %s %v\n", time.Now().Format(time.RFC3339), p.Path, p.Args)

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
	// Reap the child when it exits so it never lingers as a zombie while
	// the supervisor lives; the state file keeps the PID for later runs.
	go func() { _ = cmd.Wait() }()
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

// stopProcess sends SIGTERM to the process group, waits up to grace for it to
// exit, then SIGKILLs it. A process that is already gone is not an error.
func stopProcess(ctx context.Context, name string, p ProcessState, grace time.Duration) error {
	if !p.alive() {
		return nil
	}
	if err := syscall.Kill(-p.PID, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		_ = syscall.Kill(p.PID, syscall.SIGTERM)
	}
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		if !p.alive() {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("stop %s: %w", name, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
	_ = syscall.Kill(-p.PID, syscall.SIGKILL)
	_ = syscall.Kill(p.PID, syscall.SIGKILL)
	for i := 0; i < 50 && p.alive(); i++ {
		time.Sleep(100 * time.Millisecond)
	}
	if p.alive() {
		return fmt.Errorf("stop %s: pid %d survived SIGKILL", name, p.PID)
	}
	return nil
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
			return fmt.Errorf("%s: process exited (%v); last log lines:\n%s", what, last, tailFile(proc.Log, 20))
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
