package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/gantry-dev/gantry/internal/devcluster/standin"
)

// runStandin serves the stand-in on every listed address until ctx ends.
// The stack starts it inside its network namespace (see devcluster's pod
// network), bound to 0.0.0.0 there, where every simulated pod IP is local.
func runStandin(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("standin", flag.ContinueOnError)
	listen := fs.String("listen", "0.0.0.0:8888,0.0.0.0:8000", "comma-separated addresses to listen on")
	if err := fs.Parse(args); err != nil {
		return err
	}
	g, ctx := errgroup.WithContext(ctx)
	for _, addr := range strings.Split(*listen, ",") {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("stand-in: %w", err)
		}
		srv := &http.Server{Handler: standin.Handler(), ReadHeaderTimeout: 10 * time.Second}
		g.Go(func() error {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				return fmt.Errorf("stand-in on %s: %w", addr, err)
			}
			return nil
		})
		g.Go(func() error {
			<-ctx.Done()
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			return srv.Shutdown(sctx)
		})
		fmt.Printf("stand-in listening on %s\n", addr)
	}
	return g.Wait()
}
