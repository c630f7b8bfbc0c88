package queue

import (
	"context"
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"

	"github.com/gantry-dev/gantry/internal/kube"
)

// cuttableProxy forwards TCP to the API server and can drop every
// connection and refuse new ones, like an API server restart, without
// disturbing the shared cluster.
type cuttableProxy struct {
	target, addr string
	mu           sync.Mutex
	ln           net.Listener
	conns        []net.Conn
}

func newCuttableProxy(t *testing.T, target string) *cuttableProxy {
	t.Helper()
	p := &cuttableProxy{target: target, addr: "127.0.0.1:0"}
	p.up(t)
	p.addr = p.ln.Addr().String()
	t.Cleanup(p.down)
	return p
}

func (p *cuttableProxy) up(t *testing.T) {
	t.Helper()
	ln, err := net.Listen("tcp", p.addr)
	require.NoError(t, err)
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", p.target)
			if err != nil {
				_ = c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, s)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(s, c); _ = s.Close() }()
			go func() { _, _ = io.Copy(c, s); _ = c.Close() }()
		}
	}()
}

func (p *cuttableProxy) down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		_ = p.ln.Close()
		p.ln = nil
	}
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
}

// TestStatusRecoversAfterAPIServerOutage reads job status through caches
// connected via a proxy, cuts the proxy while a job is submitted, restores
// it, and expects the caches to catch up by themselves.
func TestStatusRecoversAfterAPIServerOutage(t *testing.T) {
	s := newStatusEnv(t)
	u, err := url.Parse(s.env.RESTConfig.Host)
	require.NoError(t, err)
	proxy := newCuttableProxy(t, u.Host)
	cfg := rest.CopyConfig(s.env.RESTConfig)
	cfg.Host = "https://" + proxy.addr
	cfg.Timeout = 5 * time.Second

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	clients, err := kube.NewClients(cfg)
	require.NoError(t, err)
	queues, err := kube.NewCache(clients.Kueue, 0)
	require.NoError(t, err)
	jobs, err := kube.NewJobCache(clients.Kube, clients.Kueue, 0)
	require.NoError(t, err)
	queues.Start(ctx)
	jobs.Start(ctx)
	require.NoError(t, queues.WaitForSync(ctx))
	require.NoError(t, jobs.WaitForSync(ctx))
	viaProxy := statusEnv{env: s.env, team: s.team, ns: s.ns, jobs: jobs,
		reader: StatusReader{Queues: queues, Workloads: jobs, Positions: VisibilityPositions{Client: clients.Kueue}}}

	s.gpuJob(t, "before", 1, "batch", long)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Equal(c, PhaseRunning, viaProxy.status(c, "before").Phase)
	}, time.Minute, 250*time.Millisecond)

	proxy.down()
	s.gpuJob(t, "during", 2, "batch", long) // created through the direct client
	// Pages keep answering from the cache while the API server is away.
	assert.Equal(t, PhaseRunning, viaProxy.status(t, "before").Phase)
	proxy.up(t)

	require.EventuallyWithT(t, func(c *assert.CollectT) {
		st := viaProxy.status(c, "during")
		assert.Equal(c, PhaseRunning, st.Phase, "the cache re-listed and watches again")
		assert.Equal(c, int64(2), st.Allocation.Count)
	}, 2*time.Minute, 500*time.Millisecond)
	// Kueue updates the ClusterQueue's counters a moment after admitting.
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		q, err := viaProxy.reader.TeamQueue(s.team)
		require.NoError(c, err)
		assert.Equal(c, 2, q.Admitted)
	}, 30*time.Second, 250*time.Millisecond)
}
