package devcluster

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The start/stop tests run a whole second stack: in a network namespace of
// their own (its loopback has the same ports free) and a scratch root, so
// the shared stack other tests use is never touched. They need root (CI
// runs as root) for the namespace and for dropping the page cache.

// stackPorts are the loopback ports the stack's processes listen on, by
// component.
func stackPorts(s *Stack) map[string][]int {
	ports := map[string][]int{}
	for _, c := range s.components() {
		if len(c.ports) > 0 {
			ports[c.name] = c.ports
		}
	}
	return ports
}

// isolatedStack re-runs the calling test inside a fresh network namespace
// and returns nil; inside it (second call) it returns a stack rooted in a
// scratch folder that shares the checkout's deploy/ and built binaries.
func isolatedStack(t *testing.T) *Stack {
	t.Helper()
	if testing.Short() {
		// As stacktest does: in CI nothing may be skipped.
		if os.Getenv("CI") != "" {
			t.Fatal("CI runs every test; -short would skip the ones that start a local stack")
		}
		t.Skip("starts a whole local stack; -short runs only the tests that need nothing running")
	}
	if os.Getenv("GANTRY_TEST_NETNS") == "" {
		runInNetns(t)
		return nil
	}
	wd, err := os.Getwd()
	require.NoError(t, err)
	shared, err := FindLayout(wd)
	require.NoError(t, err)
	root := os.Getenv("GANTRY_TEST_STACK_ROOT")
	require.NotEmpty(t, root)
	require.NoError(t, os.Symlink(shared.Deploy(), filepath.Join(root, "deploy")))
	s := &Stack{layout: Layout{Root: root}, out: testLog{t}}
	require.NoError(t, s.layout.ensureDirs())
	dir, err := s.binDir()
	require.NoError(t, err)
	require.NoError(t, binariesComplete(dir), "the cluster binaries are built by `gantry-dev up` (make test does it first)")
	return s
}

// runInNetns runs the current test again, alone, in a new network
// namespace with only loopback up, and fails when it fails.
func runInNetns(t *testing.T) {
	t.Helper()
	name := fmt.Sprintf("gantry-test-%d", os.Getpid())
	ip := func(args ...string) {
		out, err := exec.Command("ip", args...).CombinedOutput()
		require.NoError(t, err, "ip %s: %s", strings.Join(args, " "), out)
	}
	ip("netns", "add", name)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "delete", name).Run() })
	ip("netns", "exec", name, "ip", "link", "set", "lo", "up")

	// PostgreSQL runs as its own unprivileged account: the scratch root
	// must be reachable for it.
	root, err := os.MkdirTemp("", "gantry-stack-")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(root, 0o755))
	wd, err := os.Getwd()
	require.NoError(t, err)
	shared, err := FindLayout(wd)
	require.NoError(t, err)
	hash, err := PinsHash(shared)
	require.NoError(t, err)
	binBase := filepath.Dir(shared.BinDir(hash))

	cmd := exec.Command("ip", "netns", "exec", name, os.Args[0],
		"-test.run=^"+t.Name()+"$", "-test.v", "-test.count=1", "-test.timeout=30m")
	cmd.Env = append(os.Environ(), "GANTRY_TEST_NETNS="+name, "GANTRY_TEST_STACK_ROOT="+root, "GANTRY_BIN_DIR="+binBase)
	out, err := cmd.CombinedOutput()
	t.Log(string(out))
	// Whatever the outcome, nothing of the second stack may outlive it.
	t.Cleanup(func() {
		s := &Stack{layout: Layout{Root: root}, out: io.Discard}
		_ = s.Down(context.Background())
		_ = os.RemoveAll(root)
	})
	require.NoError(t, err, "the test in network namespace %s failed; its output is above, and ends:\n%s", name, failureExcerpt(string(out)))
}

// failureExcerpt is the part of a failed test's output that says why: its
// assertion (the last "Error Trace:" block) with the log lines before it,
// else its last lines. CI shows only the start and end of a long failure,
// and the whole output of ten stack starts is long.
func failureExcerpt(out string) string {
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	from := len(lines) - 30
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.Contains(lines[i], "Error Trace:") {
			from = i - 15
			break
		}
	}
	return strings.Join(lines[max(from, 0):], "\n")
}

type testLog struct{ t *testing.T }

func (w testLog) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// leftovers lists processes that belong to the stack: started from its
// binaries, or pointing at its files (PostgreSQL's and Prometheus' data,
// the IdP's folder).
func leftovers(t *testing.T, s *Stack) []string {
	t.Helper()
	bins, err := s.binDir()
	require.NoError(t, err)
	local := s.layout.Local() + string(filepath.Separator)
	idp, err := filepath.EvalSymlinks(s.layout.Deploy("local", "idp"))
	require.NoError(t, err)
	ownNet, err := os.Readlink("/proc/self/ns/net")
	require.NoError(t, err)
	entries, err := os.ReadDir("/proc")
	require.NoError(t, err)
	var found []string
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		// Only this namespace's stack: the shared one runs beside it.
		if net, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", pid)); net != ownNet {
			continue
		}
		if st, err := readProcStat(pid); err != nil || st.zombie() {
			continue
		}
		exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
		cwd, _ := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		args := string(bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '}))
		if strings.HasPrefix(exe, bins+string(filepath.Separator)) ||
			strings.Contains(args, local) || cwd == idp {
			found = append(found, fmt.Sprintf("pid %d: %s", pid, args))
		}
	}
	return found
}

// heldPorts lists the stack's ports something still listens on.
func heldPorts(s *Stack) []string {
	var held []string
	for name, ports := range stackPorts(s) {
		for _, p := range ports {
			if portsFree([]int{p}) != nil {
				held = append(held, fmt.Sprintf("%s:%d", name, p))
			}
		}
	}
	return held
}

// dropPageCache makes every binary cold again, as on a fresh machine: a
// freshly exec'd binary then takes a while to map, which once made the
// supervisor call a live etcd dead.
func dropPageCache(t *testing.T) {
	t.Helper()
	syscall.Sync()
	require.NoError(t, os.WriteFile("/proc/sys/vm/drop_caches", []byte("3\n"), 0o200),
		"dropping the page cache needs root (CI runs as root)")
}

// burnCPU keeps every core busy until the test ends.
func burnCPU(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range runtime.NumCPU() {
		wg.Go(func() {
			x := 1
			for ctx.Err() == nil {
				for i := 0; i < 1_000_000; i++ {
					x = x*31 + i
				}
			}
			_ = x
		})
	}
	t.Cleanup(func() { cancel(); wg.Wait() })
}

func requireClean(t *testing.T, s *Stack, after string) {
	t.Helper()
	// A stopped process' listening socket is closed by the kernel as the
	// process exits; give the last ones a moment.
	var procs, ports []string
	for i := 0; i < 20; i++ {
		procs, ports = leftovers(t, s), heldPorts(s)
		if len(procs) == 0 && len(ports) == 0 {
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
	require.Empty(t, procs, "stack processes left after %s", after)
	require.Empty(t, ports, "stack ports held after %s", after)
}

func TestStackUpAndDownTenTimesColdCacheBusyCores(t *testing.T) {
	ctx := context.Background()
	s := isolatedStack(t)
	if s == nil {
		return
	}
	requireClean(t, s, "nothing started yet")
	burnCPU(t)

	for i := 1; i <= 10; i++ {
		dropPageCache(t)
		t0 := time.Now()
		_, err := s.Up(ctx)
		require.NoError(t, err, "up #%d", i)
		t.Logf("up #%d in %s", i, time.Since(t0).Round(100*time.Millisecond))
		require.NoError(t, s.Down(ctx), "down #%d", i)
		requireClean(t, s, fmt.Sprintf("down #%d", i))
	}
}

func TestFailedUpLeavesNothingAndNamesTheCause(t *testing.T) {
	ctx := context.Background()
	type fault struct {
		process string
		// component is the name the failure message gives.
		component string
		how       string
		// want is what the message quotes from the log (or the start error).
		want string
	}
	faults := []fault{
		{postgresProcs, "postgres", "port taken", "port 127.0.0.1:55432 is already in use by pid"},
		{idpProcs, "identity provider", "bad flag", "bad option: --gantry-no-such-flag"},
		{procEtcd, "etcd", "binary missing", "no such file or directory"},
		{procAPIServer, "kube-apiserver", "bad flag", "unknown flag: --gantry-no-such-flag"},
		{procKCM, "controller-manager", "port taken", "port 127.0.0.1:10257 is already in use by pid"},
		{procScheduler, "kube-scheduler", "binary missing", "no such file or directory"},
		{procKueue, "kueue", "bad flag", "flag provided but not defined: -gantry-no-such-flag"},
		{procKwok, "kwok (GPU node pools)", "port taken", "port 127.0.0.1:10247 is already in use by pid"},
		{procPrometheus, "prometheus", "bad flag", "unknown long flag '--gantry-no-such-flag'"},
	}
	s := isolatedStack(t)
	if s == nil {
		return
	}
	requireClean(t, s, "nothing started yet")

	for _, f := range faults {
		t.Run(f.component+" "+f.how, func(t *testing.T) {
			s.tamper = func(p *Process) {
				if p.Name != f.process {
					return
				}
				switch f.how {
				case "bad flag":
					p.Args = append([]string{"--gantry-no-such-flag"}, p.Args...)
				case "binary missing":
					p.Path = filepath.Join(t.TempDir(), "missing", filepath.Base(p.Path))
				}
			}
			defer func() { s.tamper = nil }()
			if f.how == "port taken" {
				l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", stackPorts(s)[f.component][0]))
				require.NoError(t, err)
				defer l.Close()
			}

			_, err := s.Up(ctx)

			require.Error(t, err, "up with %s of %s", f.how, f.component)
			assert.Contains(t, err.Error(), "bring up "+f.component+":", "the message names the component")
			assert.Contains(t, err.Error(), f.want, "the message quotes the line that explains it")
			st, rerr := ReadState(s.layout)
			require.NoError(t, rerr)
			assert.Empty(t, st.Processes, "a failed up records nothing as running")
			var procs []string
			for i := 0; i < 20; i++ {
				if procs = leftovers(t, s); len(procs) == 0 {
					break
				}
				time.Sleep(250 * time.Millisecond)
			}
			assert.Empty(t, procs, "processes left by the failed up")
			held := heldPorts(s)
			if f.how == "port taken" {
				// The test's own listener holds the component's first port.
				ours := fmt.Sprintf("%s:%d", f.component, stackPorts(s)[f.component][0])
				held = slices.DeleteFunc(held, func(h string) bool { return h == ours })
			}
			assert.Empty(t, held, "ports left held by the failed up")
		})
	}
}

func TestLiveChildIsNeverCalledDeadWhileItsBinaryMaps(t *testing.T) {
	// A child of the supervisor is judged by its own exit: even when /proc
	// says nothing useful yet, it counts as alive until Wait returns.
	s := scratchStack(t)
	ps, err := s.run(Process{Name: "sleeper", Path: "/bin/sleep", Args: []string{"300"}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = stopProcess(context.Background(), "sleeper", *ps, 0) })
	require.True(t, ps.alive())
	require.NotZero(t, ps.StartTicks, "the start time names the process for later runs")

	// A later run (no exit channel) tells it by PID and start time.
	later := *ps
	later.exited = nil
	assert.True(t, later.alive(), "same PID and start time: the same process")
	reused := later
	reused.StartTicks++
	assert.False(t, reused.alive(), "same PID, other start time: a reused PID is not our process")
	// A state file from before start ticks were kept: judged by the time it
	// says the process started, never by /proc/PID/cmdline.
	legacy := later
	legacy.StartTicks = 0
	assert.True(t, legacy.alive(), "recorded start time matches the process's")
	legacy.StartedAt = legacy.StartedAt.Add(-time.Minute)
	assert.False(t, legacy.alive(), "a process that started a minute after the recorded one is someone else")

	require.NoError(t, stopProcess(context.Background(), "sleeper", *ps, 5*time.Second))
	assert.False(t, ps.alive())
	assert.False(t, later.alive())
}

func TestStopKillsTheWholeProcessGroup(t *testing.T) {
	// A shell that ignores SIGTERM and leaves a grandchild behind: stop
	// must still leave no member of the group.
	s := scratchStack(t)
	ps, err := s.run(Process{Name: "stubborn", Path: "/bin/sh", Args: []string{"-c", "trap '' TERM; sleep 300 & sleep 300; wait"}})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(groupMembers(ps.PID)) >= 2 }, 5*time.Second, 50*time.Millisecond)

	require.NoError(t, stopProcess(context.Background(), "stubborn", *ps, 500*time.Millisecond))

	assert.Empty(t, groupMembers(ps.PID), "no process of the group is left")
}

// TestHelperSupervisor is not a test: the crash test below runs the test
// binary as a supervisor that starts two processes and waits to be killed.
func TestHelperSupervisor(t *testing.T) {
	root := os.Getenv("GANTRY_TEST_SUPERVISOR_ROOT")
	if root == "" {
		return
	}
	s := &Stack{layout: Layout{Root: root}, out: os.Stdout, state: State{Processes: map[string]ProcessState{}}}
	for _, name := range []string{"first", "second"} {
		if _, err := s.run(Process{Name: name, Path: "/bin/sleep", Args: []string{"300"}}); err != nil {
			t.Fatal(err)
		}
	}
	fmt.Println("started")
	time.Sleep(5 * time.Minute)
}

func TestDownAfterTheSupervisorWasKilledStopsWhatItRecorded(t *testing.T) {
	s := scratchStack(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperSupervisor$")
	cmd.Env = append(os.Environ(), "GANTRY_TEST_SUPERVISOR_ROOT="+s.layout.Root)
	var out bytes.Buffer
	cmd.Stdout = &out
	require.NoError(t, cmd.Start())
	require.Eventually(t, func() bool {
		st, err := ReadState(s.layout)
		return err == nil && len(st.Processes) == 2
	}, 30*time.Second, 50*time.Millisecond, "the supervisor records what it starts")
	st, err := ReadState(s.layout)
	require.NoError(t, err)

	require.NoError(t, cmd.Process.Kill()) // kill -9 of the supervisor
	_ = cmd.Wait()
	for name, ps := range st.Processes {
		require.True(t, ps.alive(), "%s outlives its killed supervisor", name)
	}

	require.NoError(t, s.Down(context.Background()))

	for name, ps := range st.Processes {
		assert.False(t, ps.alive(), "%s (pid %d) still running after down", name, ps.PID)
	}
}
