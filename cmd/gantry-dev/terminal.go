package main

import (
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"
)

// takeTerminal moves gantry-dev into its own process group and makes that
// group the terminal's foreground, so Ctrl-C reaches only gantry-dev (which
// stops what it started and exits 0) and not `make` or `go run` above it,
// which would otherwise die of the signal and report an error after a
// clean stop. The returned function gives the terminal back. Without a
// controlling terminal (CI, pipes) it does nothing.
func takeTerminal() (restore func()) {
	tty, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if err != nil {
		return func() {}
	}
	fd := int(tty.Fd())
	orig, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP)
	if err != nil || orig != syscall.Getpgrp() {
		// Not in the foreground (started in the background): leave it be.
		_ = tty.Close()
		return func() {}
	}
	// A background group changing the foreground gets SIGTTOU; ignore it
	// for the switch and for the way back.
	signal.Ignore(syscall.SIGTTOU)
	if err := syscall.Setpgid(0, 0); err != nil {
		_ = tty.Close()
		return func() {}
	}
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPGRP, syscall.Getpgrp()); err != nil {
		_ = tty.Close()
		return func() {}
	}
	return func() {
		_ = unix.IoctlSetPointerInt(fd, unix.TIOCSPGRP, orig)
		_ = tty.Close()
	}
}
