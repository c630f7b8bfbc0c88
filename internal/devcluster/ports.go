package devcluster

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// portsFree checks that nothing listens on the given loopback ports yet. A
// leftover process (an earlier run's, another checkout's) would otherwise
// answer the health check in place of the one just started, which then
// dies unseen.
func portsFree(ports []int) error {
	for _, p := range ports {
		addr := fmt.Sprintf("127.0.0.1:%d", p)
		c, err := net.DialTimeout("tcp", addr, 500*time.Millisecond)
		if err != nil {
			continue
		}
		_ = c.Close()
		owner := "another program"
		if pid, cmd := listenerOf(p); pid > 0 {
			owner = fmt.Sprintf("pid %d (%s)", pid, cmd)
		}
		return fmt.Errorf("port %s is already in use by %s, which this stack did not start: stop it, or run `gantry-dev down` if an earlier run left it", addr, owner)
	}
	return nil
}

// listenerOf finds the process listening on a TCP port from /proc (the
// socket's inode in /proc/net/tcp, then the process holding it), or 0.
func listenerOf(port int) (int, string) {
	inodes := map[string]bool{}
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(table)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Scan() // header
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			// local_address is HEXIP:HEXPORT; state 0A is LISTEN.
			if len(f) < 10 || f[3] != "0A" {
				continue
			}
			_, hexPort, ok := strings.Cut(f[1], ":")
			if p, err := strconv.ParseInt(hexPort, 16, 32); ok && err == nil && int(p) == port {
				inodes["socket:["+f[9]+"]"] = true
			}
		}
	}
	if len(inodes) == 0 {
		return 0, ""
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	for _, fd := range procs {
		target, err := os.Readlink(fd)
		if err != nil || !inodes[target] {
			continue
		}
		pidDir := filepath.Dir(filepath.Dir(fd))
		pid, _ := strconv.Atoi(filepath.Base(pidDir))
		cmdline, _ := os.ReadFile(filepath.Join(pidDir, "cmdline"))
		cmd := strings.TrimSpace(string(bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '})))
		if cmd == "" {
			// cmdline reads empty while the process execs (or is a
			// zombie); its command name still says what holds the port.
			comm, _ := os.ReadFile(filepath.Join(pidDir, "comm"))
			cmd = strings.TrimSpace(string(comm))
		}
		if len(cmd) > 120 {
			cmd = cmd[:120] + "…"
		}
		return pid, cmd
	}
	return 0, ""
}
