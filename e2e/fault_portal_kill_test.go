package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gantry-dev/gantry/internal/devcluster/stacktest"
	"github.com/gantry-dev/gantry/internal/naming"
	"github.com/gantry-dev/gantry/internal/store"
)

// faultLaunches is how many launches are in flight when the portal is killed.
const faultLaunches = 100

// TestPortalKilledDuringLaunchesLeavesEachLaunchOnce kills the portal with
// SIGKILL while 100 launches through the JSON API are in flight. After a
// restart, every launch that was answered 2xx exists exactly once, as a
// launch record and as a Job with one Workload; every other one, retried
// with its launch ID, ends the same way, never twice.
func TestPortalKilledDuringLaunchesLeavesEachLaunchOnce(t *testing.T) {
	env := stacktest.Stack(t)
	dsn := stacktest.Postgres(t)
	seed := WithEnv("GANTRY_SEED_TEMPLATES", stackRoot(t)+"/deploy/templates")
	portal := StartPortal(t, WithDatabase(dsn), seed)
	b := NewBrowser(t, portal)
	b.LoginAs("carol")
	b.Open("/profile")
	b.Fill("#token-name", "fault-launcher")
	b.Fill("#token-expires", "1")
	b.Submit(testID("create-token"))
	token := b.Value(testID("new-token"))
	require.NotEmpty(t, token)

	run := fmt.Sprintf("k%05d", time.Now().UnixNano()%100000)
	launchID := func(i int) string { return fmt.Sprintf("%s%03d", run, i) }
	body := func(i int) string {
		return `{"template":"pytorch-train","parameters":{"gpus":"1","memory":"16Gi"},"launchId":"` + launchID(i) + `"}`
	}
	post := func(ctx context.Context, p *Portal, i int) (int, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.URL+"/api/v1/teams/nlp/jobs", strings.NewReader(body(i)))
		if err != nil {
			return 0, err
		}
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := (&http.Client{Timeout: time.Minute}).Do(req)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		sel := naming.LabelLaunchID
		jobs, err := env.Kube.BatchV1().Jobs("team-nlp").List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			return
		}
		bg := metav1.DeletePropagationBackground
		for _, j := range jobs.Items {
			if strings.HasPrefix(j.Labels[sel], run) {
				_ = env.Kube.BatchV1().Jobs("team-nlp").Delete(ctx, j.Name, metav1.DeleteOptions{PropagationPolicy: &bg})
			}
		}
	})

	// 100 launches at once; the portal dies once a few have been answered.
	statuses := make([]int, faultLaunches)
	var answered atomic.Int64
	killed := make(chan struct{})
	var wg sync.WaitGroup
	for i := range faultLaunches {
		wg.Go(func() {
			status, err := post(t.Context(), portal, i)
			if err == nil {
				statuses[i] = status
				answered.Add(1)
			}
		})
	}
	go func() {
		defer close(killed)
		deadline := time.Now().Add(2 * time.Minute)
		for answered.Load() < 5 && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		portal.Kill(t)
	}()
	<-killed
	wg.Wait()
	var ok2xx, lost int
	for _, s := range statuses {
		if s >= 200 && s < 300 {
			ok2xx++
		} else {
			lost++
		}
	}
	t.Logf("killed the portal with %d launches answered 2xx and %d unanswered or failed", ok2xx, lost)
	require.Positive(t, lost, "the portal was killed while launches were in flight")

	// A new portal on the same database; unanswered launches are retried with their ID.
	again := StartPortal(t, WithDatabase(dsn), seed)
	for i, s := range statuses {
		if s >= 200 && s < 300 {
			continue
		}
		require.Eventually(t, func() bool {
			s, err := post(t.Context(), again, i)
			return err == nil && s >= 200 && s < 300
		}, time.Minute, time.Second, "launch %s retried after the restart", launchID(i))
	}

	db, err := store.Open(t.Context(), dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	ctx := t.Context()
	jobOf := map[string]string{} // Job name -> launch ID
	for i := range faultLaunches {
		id := launchID(i)
		rec, err := db.LaunchByID(ctx, id)
		require.NoError(t, err, "launch %s has its record", id)
		jobs, err := env.Kube.BatchV1().Jobs("team-nlp").List(ctx, metav1.ListOptions{LabelSelector: naming.LabelLaunchID + "=" + id})
		require.NoError(t, err)
		require.Len(t, jobs.Items, 1, "launch %s (answered %d before the kill) is one Job", id, statuses[i])
		assert.Equal(t, rec.Name, jobs.Items[0].Name, "launch %s: the record names the Job", id)
		jobOf[rec.Name] = id
	}
	// Kueue makes each Job's Workload; every launch ends as exactly one.
	workloads := func() map[string]int {
		wls, err := env.Kueue.KueueV1beta2().Workloads("team-nlp").List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		n := map[string]int{}
		for _, wl := range wls.Items {
			for _, ref := range wl.OwnerReferences {
				if id, ok := jobOf[ref.Name]; ok && ref.Kind == "Job" {
					n[id]++
				}
			}
		}
		return n
	}
	var n map[string]int
	require.Eventually(t, func() bool {
		n = workloads()
		return len(n) == faultLaunches
	}, 5*time.Minute, 2*time.Second, "every launch has its Workload")
	for id, count := range n {
		assert.Equal(t, 1, count, "launch %s is exactly one Workload", id)
	}
}
