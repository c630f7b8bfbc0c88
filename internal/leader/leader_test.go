package leader_test

import (
	"context"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/gantry-dev/gantry/internal/devcluster/stacktest"
	"github.com/gantry-dev/gantry/internal/leader"
)

func TestConfigValidate(t *testing.T) {
	good := leader.Config{Enabled: true, Namespace: "gantry", Name: "gantry", Identity: "a",
		LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second}
	cases := map[string]struct {
		change  func(c *leader.Config)
		wantErr string
	}{
		"valid":                         {change: func(*leader.Config) {}},
		"disabled needs nothing":        {change: func(c *leader.Config) { *c = leader.Config{} }},
		"no lease name":                 {change: func(c *leader.Config) { c.Name = "" }, wantErr: "lease namespace and name"},
		"no identity":                   {change: func(c *leader.Config) { c.Identity = "" }, wantErr: "identity"},
		"renew deadline beyond lease":   {change: func(c *leader.Config) { c.RenewDeadline = 20 * time.Second }, wantErr: "lease duration > renew deadline"},
		"retry period beyond deadline":  {change: func(c *leader.Config) { c.RetryPeriod = 10 * time.Second }, wantErr: "renew deadline > retry period"},
		"zero retry period is rejected": {change: func(c *leader.Config) { c.RetryPeriod = 0 }, wantErr: "retry period > 0"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := good
			tc.change(&c)
			err := c.Validate()
			if tc.wantErr == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorContains(t, err, tc.wantErr)
		})
	}
}

func TestIdentityIsUniquePerProcess(t *testing.T) {
	assert.Regexp(t, `^gantry-7d9f-abc_\d+$`, leader.Identity("gantry-7d9f-abc"))
	assert.Regexp(t, `^.+_\d+$`, leader.Identity(""))
}

// replica is one elector with a counting loop, as a portal process has.
type replica struct {
	elector *leader.Elector
	ticks   atomic.Int64
	running atomic.Bool
	cancel  context.CancelFunc
	done    chan struct{}
}

func startReplica(t *testing.T, kc kubernetes.Interface, ns, lease, identity string) *replica {
	t.Helper()
	cfg := leader.Config{Enabled: true, Namespace: ns, Name: lease, Identity: identity,
		LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 250 * time.Millisecond}
	e, err := leader.New(cfg, kc, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	r := &replica{elector: e, done: make(chan struct{})}
	var loops leader.Loops
	loops.Add("count", func(ctx context.Context) {
		r.running.Store(true)
		defer r.running.Store(false)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				r.ticks.Add(1)
			}
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() {
		defer close(r.done)
		assert.NoError(t, e.Run(ctx, &loops))
	}()
	t.Cleanup(r.stop)
	return r
}

func (r *replica) stop() {
	r.cancel()
	<-r.done
}

func TestOneReplicaRunsTheLoopsAndHandsOverOnShutdown(t *testing.T) {
	env := stacktest.Stack(t)
	ns := env.Namespace(t, "leader", nil)
	a := startReplica(t, env.Kube, ns, "gantry", "a")
	require.Eventually(t, a.elector.Leading, 10*time.Second, 50*time.Millisecond, "first replica never led")
	b := startReplica(t, env.Kube, ns, "gantry", "b")

	// b waits while a renews: its loops never run.
	require.Never(t, b.running.Load, time.Second, 50*time.Millisecond, "follower ran the loops")
	assert.True(t, a.running.Load())

	// a shuts down: it releases the Lease, so b leads well before the Lease would expire.
	t0 := time.Now()
	a.stop()
	assert.False(t, a.running.Load(), "loops still running after shutdown")
	assert.False(t, a.elector.Leading())
	require.Eventually(t, b.running.Load, 2*time.Second, 20*time.Millisecond, "follower did not take over")
	t.Logf("hand-over after release took %s", time.Since(t0).Round(time.Millisecond))

	lease, err := env.Kube.CoordinationV1().Leases(ns).Get(t.Context(), "gantry", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "b", ptr.Deref(lease.Spec.HolderIdentity, ""))
}

func TestLoopsStopWhenTheLeaseIsLost(t *testing.T) {
	env := stacktest.Stack(t)
	ns := env.Namespace(t, "leader", nil)
	a := startReplica(t, env.Kube, ns, "gantry", "a")
	require.Eventually(t, a.running.Load, 10*time.Second, 50*time.Millisecond, "replica never led")

	// Someone else takes the Lease (as a replica would after a partition).
	leases := env.Kube.CoordinationV1().Leases(ns)
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		l, err := leases.Get(t.Context(), "gantry", metav1.GetOptions{})
		if err != nil {
			return err
		}
		l.Spec.HolderIdentity = ptr.To("intruder")
		l.Spec.LeaseDurationSeconds = ptr.To[int32](3600)
		l.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
		_, err = leases.Update(t.Context(), l, metav1.UpdateOptions{})
		return err
	}))
	require.Eventually(t, func() bool { return !a.running.Load() && !a.elector.Leading() }, 5*time.Second, 20*time.Millisecond,
		"loops kept running after the Lease was lost")
	n := a.ticks.Load()
	require.Never(t, func() bool { return a.ticks.Load() != n }, 500*time.Millisecond, 50*time.Millisecond, "loop ticked without the Lease")
}

func TestDisabledRunsLoopsAtOnce(t *testing.T) {
	e, err := leader.New(leader.Config{}, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	var ran atomic.Bool
	var loops leader.Loops
	loops.Add("one", func(ctx context.Context) { ran.Store(true); <-ctx.Done() })
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx, &loops) }()
	require.Eventually(t, ran.Load, time.Second, 10*time.Millisecond)
	assert.True(t, e.Leading())
	cancel()
	require.NoError(t, <-done)
	assert.False(t, e.Leading())
}
