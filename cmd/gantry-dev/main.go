// Command gantry-dev brings Gantry's local stack up and down:
//
//	gantry-dev up [--only postgres,idp,cluster,prometheus]
//	gantry-dev down
//	gantry-dev status
//	gantry-dev run      (the stack plus the portal, as `make run`)
//	gantry-dev standin  (the simulated pods' server; the stack starts it in its network namespace)
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/gantry-dev/gantry/internal/devcluster"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "gantry-dev:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: gantry-dev up|down|status")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if args[0] == "standin" {
		return runStandin(ctx, args[1:])
	}
	s, err := devcluster.New(".", os.Stdout)
	if err != nil {
		return err
	}
	switch args[0] {
	case "up":
		fs := flag.NewFlagSet("up", flag.ContinueOnError)
		only := fs.String("only", "", "comma-separated parts to bring up: "+strings.Join(devcluster.AllGroups(), ","))
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		var groups []string
		if *only != "" {
			groups = strings.Split(*only, ",")
		}
		_, err := s.Up(ctx, groups...)
		return err
	case "down":
		return s.Down(ctx)
	case "status":
		return s.Status(ctx)
	case "run":
		defer takeTerminal()()
		err := runPortal(ctx, s)
		if err != nil && ctx.Err() != nil {
			// Ctrl-C while the stack was still coming up: what this run
			// started is stopped (the "stopped" lines say so); that is the
			// outcome the person asked for, not a failure.
			fmt.Println("interrupted: stopped what this run had started")
			return nil
		}
		return err
	default:
		return fmt.Errorf("unknown command %q: use up, down or status", args[0])
	}
}
