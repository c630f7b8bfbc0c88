package proxy

import (
	"context"
	"crypto/sha256"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gantry-dev/gantry/internal/catalog"
	"github.com/gantry-dev/gantry/internal/kube"
	"github.com/gantry-dev/gantry/internal/queue"
	"github.com/gantry-dev/gantry/internal/store"
)

type fakeEndpoints []kube.Endpoint

func (f fakeEndpoints) ServiceEndpoints(string, string, string) ([]kube.Endpoint, error) {
	return f, nil
}

func TestTargetPicksAReadyAddressOrSaysWhyNot(t *testing.T) {
	ready := kube.Endpoint{Address: "10.244.0.7", Ready: true, Port: 8888}
	notReady := kube.Endpoint{Address: "10.244.0.8", Port: 8888}
	cases := map[string]struct {
		kind    catalog.Kind
		phase   queue.Phase
		eps     fakeEndpoints
		want    string
		reason  Reason
		words   string
		resumes bool
	}{
		"running notebook":        {catalog.KindNotebook, queue.PhaseRunning, fakeEndpoints{notReady, ready}, "http://10.244.0.7:8888", "", "", false},
		"stopped notebook":        {kind: catalog.KindNotebook, phase: queue.PhaseStopped, reason: ReasonStopped, words: "The notebook is stopped: its workspace is kept. Resume it to open it again.", resumes: true},
		"queued notebook":         {kind: catalog.KindNotebook, phase: queue.PhaseQueued, reason: ReasonStarting, words: "The notebook is starting (queued): it opens here once its server is ready."},
		"notebook not ready yet":  {kind: catalog.KindNotebook, phase: queue.PhaseRunning, eps: fakeEndpoints{notReady}, reason: ReasonStarting, words: "The notebook is starting: its pod runs but its server does not answer its readiness check yet."},
		"endpoint without ready":  {kind: catalog.KindInference, phase: queue.PhaseRunning, eps: fakeEndpoints{notReady}, reason: ReasonNoReadyReplica, words: "The endpoint has no ready replica: no pod of it passes its readiness check yet. Its page shows its pods."},
		"endpoint with no pods":   {kind: catalog.KindInference, phase: queue.PhaseRunning, reason: ReasonNoReadyReplica, words: "The endpoint has no ready replica: no pod of it passes its readiness check yet. Its page shows its pods."},
		"failed endpoint":         {kind: catalog.KindInference, phase: queue.PhaseFailed, reason: ReasonEnded, words: "The endpoint has ended (failed): there is nothing to open. Its page says why."},
		"training job":            {kind: catalog.KindTraining, phase: queue.PhaseRunning, eps: fakeEndpoints{ready}, reason: ReasonNotServed, words: "Only notebooks and inference endpoints can be opened from the portal."},
		"terminating is not used": {kind: catalog.KindInference, phase: queue.PhaseRunning, eps: fakeEndpoints{{Address: "10.244.0.9", Ready: true, Terminating: true, Port: 8000}}, reason: ReasonNoReadyReplica, words: "The endpoint has no ready replica: no pod of it passes its readiness check yet. Its page shows its pods."},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			u, err := Target(tc.eps, Job{Kind: tc.kind, Namespace: "team-vision", Service: "x", Phase: tc.phase})
			if tc.want != "" {
				require.NoError(t, err)
				assert.Equal(t, tc.want, u.String())
				return
			}
			var un *Unavailable
			require.True(t, errors.As(err, &un), "an *Unavailable: %v", err)
			assert.True(t, errors.Is(err, ErrUnavailable))
			if diff := cmp.Diff(Unavailable{Reason: tc.reason, Words: tc.words, Resumable: tc.resumes}, *un); diff != "" {
				t.Error(diff)
			}
		})
	}
}

// keyStore is an in-memory Store for the key checks.
type keyStore struct {
	Store
	keys []store.EndpointKey
}

func (s *keyStore) EndpointKeyByHash(_ context.Context, hash []byte) (store.EndpointKey, error) {
	for _, k := range s.keys {
		if string(k.Hash) == string(hash) {
			return k, nil
		}
	}
	return store.EndpointKey{}, store.ErrNotFound
}

func TestAuthenticateAcceptsOnlyAnActiveKeyOfThisEndpoint(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	hash := func(s string) []byte { h := sha256.Sum256([]byte(s)); return h[:] }
	revokedAt := now.Add(-time.Minute)
	st := &keyStore{keys: []store.EndpointKey{
		{ID: 1, Team: "vision", Name: "llm", Hash: hash("gek_good"), ExpiresAt: now.Add(time.Hour)},
		{ID: 2, Team: "vision", Name: "other", Hash: hash("gek_other"), ExpiresAt: now.Add(time.Hour)},
		{ID: 3, Team: "vision", Name: "llm", Hash: hash("gek_revoked"), ExpiresAt: now.Add(time.Hour), RevokedAt: &revokedAt},
		{ID: 4, Team: "vision", Name: "llm", Hash: hash("gek_expired"), ExpiresAt: now},
	}}
	a := NewAccess(st, nil, func() time.Time { return now })
	k, err := a.Authenticate(context.Background(), "vision", "llm", "Bearer gek_good")
	require.NoError(t, err)
	assert.Equal(t, int64(1), k.ID)
	for what, header := range map[string]string{
		"no header": "", "basic auth": "Basic Z2VrX2dvb2Q=", "a personal API token": "Bearer gty_abc",
		"unknown key": "Bearer gek_nope", "another endpoint's key": "Bearer gek_other",
		"revoked key": "Bearer gek_revoked", "expired key": "Bearer gek_expired",
	} {
		_, err := a.Authenticate(context.Background(), "vision", "llm", header)
		assert.ErrorIs(t, err, ErrRefused, what)
	}
}

type usageStore struct {
	rows []store.EndpointUsageHour
	fail bool
}

func (s *usageStore) AddEndpointUsage(_ context.Context, rows []store.EndpointUsageHour) error {
	if s.fail {
		return errors.New("database down")
	}
	s.rows = append(s.rows, rows...)
	return nil
}

func TestUsageCountsAndFlushesHourly(t *testing.T) {
	now := time.Date(2026, 11, 30, 14, 30, 0, 0, time.UTC)
	st := &usageStore{fail: true}
	u, err := NewUsage(prometheus.NewRegistry(), st, func() time.Time { return now })
	require.NoError(t, err)
	for i := 1; i <= 100; i++ {
		status := 200
		if i%10 == 0 {
			status = 502
		}
		u.Record(Call{Team: "vision", Name: "llm", Status: status, Latency: time.Duration(i) * time.Millisecond, PromptTokens: 2, CompletionTokens: 3})
	}
	s := u.Stats("vision", "llm")
	assert.Equal(t, Stats{Requests: 100, Errors: 10, ErrorRate: 0.1, P50: 50 * time.Millisecond, P99: 99 * time.Millisecond}, s)

	require.Error(t, u.Flush(context.Background()), "the database is down")
	st.fail = false
	u.Record(Call{Team: "vision", Name: "llm", Status: 200})
	require.NoError(t, u.Flush(context.Background()))
	require.Len(t, st.rows, 1, "a failed flush's counts are kept for the next one")
	assert.Equal(t, store.EndpointUsageHour{Team: "vision", Name: "llm", Hour: time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC),
		Requests: 101, Errors: 10, PromptTokens: 200, CompletionTokens: 300}, st.rows[0])
	require.NoError(t, u.Flush(context.Background()))
	assert.Len(t, st.rows, 1, "nothing new, nothing written")
}
