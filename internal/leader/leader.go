// Package leader runs the portal's background loops (quota expiry, cost
// ledger, idle culling) on one replica at a time: the replica holding a
// coordination.k8s.io Lease runs them, and stops them as soon as it loses it.
package leader

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// Config says which Lease the replicas compete for and how fast a dead
// leader is replaced.
type Config struct {
	// Enabled turns leader election on. Off, every loop runs in this
	// process for as long as it lives (one replica, local development).
	Enabled bool
	// Namespace and Name identify the Lease.
	Namespace string
	Name      string
	// Identity names this replica in the Lease; unique per process.
	Identity string
	// LeaseDuration is how long followers wait before taking over a Lease
	// that was not renewed: the longest time without a leader.
	LeaseDuration time.Duration
	// RenewDeadline is how long the leader keeps trying to renew before it
	// gives up leading; shorter than LeaseDuration.
	RenewDeadline time.Duration
	// RetryPeriod is the wait between attempts to acquire or renew.
	RetryPeriod time.Duration
}

// Validate reports settings client-go would reject, as one error.
func (c Config) Validate() error {
	if !c.Enabled {
		return nil
	}
	var errs []error
	if c.Namespace == "" || c.Name == "" {
		errs = append(errs, errors.New("leader election needs a lease namespace and name"))
	}
	if c.Identity == "" {
		errs = append(errs, errors.New("leader election needs an identity"))
	}
	if c.RetryPeriod <= 0 || c.RenewDeadline <= c.RetryPeriod || c.LeaseDuration <= c.RenewDeadline {
		errs = append(errs, errors.New("leader election needs lease duration > renew deadline > retry period > 0"))
	}
	return errors.Join(errs...)
}

// Identity is the name a replica uses in the Lease: the pod name when set
// (Kubernetes sets the hostname to it too), otherwise the hostname, with
// the process id so two processes on one host are told apart.
func Identity(podName string) string {
	if podName == "" {
		h, err := os.Hostname()
		if err != nil || h == "" {
			h = "gantry"
		}
		podName = h
	}
	return fmt.Sprintf("%s_%d", podName, os.Getpid())
}

// Loop is one background loop; Run blocks until ctx ends.
type Loop struct {
	Name string
	Run  func(ctx context.Context)
}

// Loops collects the background loops while the portal is wired up.
type Loops struct {
	list []Loop
}

// Add registers a loop to run while this replica leads.
func (l *Loops) Add(name string, run func(ctx context.Context)) {
	l.list = append(l.list, Loop{Name: name, Run: run})
}

// Elector runs loops while this replica holds the Lease.
type Elector struct {
	cfg     Config
	client  kubernetes.Interface
	log     *slog.Logger
	leading atomic.Bool
}

// New returns an elector for cfg; client writes the Lease.
func New(cfg Config, client kubernetes.Interface, log *slog.Logger) (*Elector, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("leader election: %w", err)
	}
	return &Elector{cfg: cfg, client: client, log: log.With("identity", cfg.Identity)}, nil
}

// Leading reports whether this replica runs the loops right now.
func (e *Elector) Leading() bool { return e.leading.Load() }

// Run blocks until ctx ends. With election disabled it runs the loops at
// once; otherwise it campaigns for the Lease, runs the loops while it holds
// it, stops them when the Lease is lost and campaigns again. On return all
// loops have stopped and a held Lease has been released, so another
// replica takes over without waiting for it to expire.
func (e *Elector) Run(ctx context.Context, loops *Loops) error {
	if !e.cfg.Enabled {
		e.leading.Store(true)
		defer e.leading.Store(false)
		runAll(ctx, loops.list)
		return nil
	}
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, e.cfg.Namespace, e.cfg.Name,
		e.client.CoreV1(), e.client.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: e.cfg.Identity})
	if err != nil {
		return fmt.Errorf("leader election: lease lock %s/%s: %w", e.cfg.Namespace, e.cfg.Name, err)
	}
	lec := leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   e.cfg.LeaseDuration,
		RenewDeadline:   e.cfg.RenewDeadline,
		RetryPeriod:     e.cfg.RetryPeriod,
		ReleaseOnCancel: true,
		Name:            e.cfg.Name,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStoppedLeading: func() {
				if e.leading.Swap(false) {
					e.log.Info("not leading: background loops stopped", "lease", e.cfg.Namespace+"/"+e.cfg.Name)
				}
			},
			OnNewLeader: func(identity string) {
				if identity != e.cfg.Identity {
					e.log.Info("another replica leads", "leader", identity)
				}
			},
		},
	}
	for {
		// A fresh elector per term: Run returns when the Lease is lost or
		// ctx ends, with the loops' context cancelled; wait for the loops
		// to stop before campaigning again. client-go starts the callback
		// on its own goroutine: a term lost within microseconds may end
		// before it starts, and then its loops see a cancelled context.
		var started atomic.Bool
		stopped := make(chan struct{})
		lec.Callbacks.OnStartedLeading = func(leadCtx context.Context) {
			started.Store(true)
			defer close(stopped)
			e.leading.Store(true)
			e.log.Info("leading: background loops started", "lease", e.cfg.Namespace+"/"+e.cfg.Name, "loops", len(loops.list))
			runAll(leadCtx, loops.list)
		}
		le, err := leaderelection.NewLeaderElector(lec)
		if err != nil {
			return fmt.Errorf("leader election: %w", err)
		}
		le.Run(ctx)
		if started.Load() {
			<-stopped
		}
		if ctx.Err() != nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(e.cfg.RetryPeriod):
		}
	}
}

// runAll runs every loop until ctx ends and returns when all have returned.
func runAll(ctx context.Context, loops []Loop) {
	var wg sync.WaitGroup
	for _, l := range loops {
		wg.Go(func() { l.Run(ctx) })
	}
	wg.Wait()
}
