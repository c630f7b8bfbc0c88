package e2e

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gantry-dev/gantry/internal/audit"
	"github.com/gantry-dev/gantry/internal/cost"
	"github.com/gantry-dev/gantry/internal/devcluster/stacktest"
	"github.com/gantry-dev/gantry/internal/money"
	"github.com/gantry-dev/gantry/internal/naming"
	"github.com/gantry-dev/gantry/internal/quota"
	"github.com/gantry-dev/gantry/internal/roster"
	"github.com/gantry-dev/gantry/internal/store"
)

// TestLeaderKilledDuringLedgerAndQuotaExpiryDoesNothingTwice: two replicas
// share the stack and a database; a team's jobs end while its time-bound
// quota grants expire. The leader is killed with SIGKILL right after it
// reverted the first grant (its ledger loop writing rows for the jobs
// ending then), and the other replica takes the loops over. Afterwards
// the ClusterQueue's quota is back to its base exactly, each grant was
// reverted once with one audit entry and one notice, and the ledger has
// one row per run with the runs' total cost.
func TestLeaderKilledDuringLedgerAndQuotaExpiryDoesNothingTwice(t *testing.T) {
	const (
		flavor = e2eFlavor
		gpu    = corev1.ResourceName(e2eGPU)
		base   = 4
	)
	start := time.Now()
	env := stacktest.Stack(t)
	dsn := stacktest.Postgres(t)
	lease := env.Namespace(t, "lease", nil)
	team := env.Team(t, stacktest.TeamSpec{Quotas: map[string]corev1.ResourceList{flavor: {gpu: resource.MustParse(fmt.Sprint(base))}}})
	fast := append(replicaOptions(dsn, lease),
		WithEnv("GANTRY_QUOTA_EXPIRY_INTERVAL", "300ms"), WithEnv("GANTRY_LEDGER_INTERVAL", "300ms"))
	portals := []*Portal{LaunchPortal(t, fast...), LaunchPortal(t, fast...)}
	for _, p := range portals {
		p.WaitHealthy(t)
	}
	t.Logf("two replicas healthy %s after start", time.Since(start).Round(time.Millisecond))
	ctx := t.Context()
	db, err := store.Open(ctx, dsn)
	require.NoError(t, err)
	defer db.Close()
	price := 4 * money.Dollar
	require.NoError(t, db.AddPrice(ctx, store.GPUPrice{Flavor: flavor, Resource: string(gpu), EffectiveFrom: start.Add(-time.Hour).UTC(), USDPerHour: price}))

	// Four one-GPU jobs within the base quota (no eviction when grants end): two end before the kill, two after it.
	jobs := env.Kube.BatchV1().Jobs(team.Namespace())
	for i, d := range []string{"2s", "3s", "16s", "18s"} {
		j := stacktest.CompliantJob(team.Name, fmt.Sprintf("run-%d", i), corev1.ResourceList{gpu: resource.MustParse("1")})
		j.Spec.Template.Annotations = map[string]string{naming.AnnotationSimulateDuration: d}
		_, err := jobs.Create(ctx, j, metav1.CreateOptions{})
		require.NoError(t, err)
	}

	// Six grants approved as a replica's request handler does: three end
	// together (the leader is mid-loop when it dies), three a little later.
	_, err = db.SaveTeam(ctx, roster.Team{Name: team.Name, DisplayName: team.Name, MemberGroups: team.MemberGroups, LeadGroups: team.LeadGroups})
	require.NoError(t, err)
	svc := quota.NewService(db, &quota.ClusterQueues{Kueue: env.Kueue, Kube: env.Kube}, audit.New(db, nil), slog.New(slog.NewTextHandler(io.Discard, nil)))
	soon, later := time.Now().Add(7*time.Second), time.Now().Add(11*time.Second)
	var ids []int64
	for i, until := range []time.Time{soon, soon, soon, later, later, later} {
		r, err := svc.File(ctx, quota.Actor{Username: "alice", MemberOf: []string{team.Name}},
			quota.NewRequest{Team: team.Name, Flavor: flavor, Resource: string(gpu), Delta: int64(i%3 + 1), Until: &until, Reason: "deadline"})
		require.NoError(t, err)
		_, err = svc.Decide(ctx, quota.Actor{Username: "erin", Admin: true}, r.ID, true, "until the deadline")
		require.NoError(t, err)
		ids = append(ids, r.ID)
	}
	require.Equal(t, int64(base+2*(1+2+3)), nominalGPUs(t, portals[0], team.Name))

	leader, other := leaderOf(t, portals, 2*testLeaseDuration)

	// Kill the leader as soon as the database shows its first revert.
	count := func(q string, args ...any) int {
		var n int
		require.NoError(t, db.SQL().QueryRowContext(ctx, q, args...).Scan(&n))
		return n
	}
	reverted := func() int {
		return count(`SELECT count(*) FROM quota_grants WHERE team = $1 AND reverted_at IS NOT NULL`, team.Name)
	}
	require.Eventually(t, func() bool { return reverted() > 0 }, 30*time.Second, 5*time.Millisecond, "the leader never reverted a grant")
	leader.Kill(t)
	atKill := reverted()
	rowsAtKill := count(`SELECT count(*) FROM cost_ledger WHERE team = $1`, team.Name)
	t.Logf("leader killed %s after start with %d of 6 grants reverted and %d of 4 ledger rows written",
		time.Since(start).Round(time.Millisecond), atKill, rowsAtKill)

	require.Eventually(t, func() bool { return leads(t, other) }, testLeaseDuration+5*time.Second, 100*time.Millisecond,
		"the other replica did not take the loops over")
	require.Eventually(t, func() bool {
		return reverted() == 6 && count(`SELECT count(*) FROM cost_ledger WHERE team = $1`, team.Name) == 4
	}, 45*time.Second, 100*time.Millisecond, "the new leader did not finish the work")
	// One more round of both loops on the new leader finds nothing more to do.
	time.Sleep(time.Second)

	assert.Equal(t, int64(base), nominalGPUs(t, portals[0], team.Name), "the quota is back to its base exactly")
	cq, err := env.Kueue.KueueV1beta2().ClusterQueues().Get(ctx, team.ClusterQueue(), metav1.GetOptions{})
	require.NoError(t, err)
	for k := range cq.Annotations {
		assert.False(t, strings.HasPrefix(k, naming.AnnotationQuotaGrantPrefix), "grant %s still marked applied", k)
	}
	for _, id := range ids {
		target := fmt.Sprintf("quota-request/%d", id)
		assert.Equal(t, 1, count(`SELECT count(*) FROM audit_log WHERE action = $1 AND target = $2`, quota.ActionExpire, target),
			"one expiry entry for %s", target)
	}
	assert.Equal(t, 6, count(`SELECT count(*) FROM notifications WHERE username = 'alice' AND text LIKE '%ended and was reverted%'`),
		"alice is told once per grant")

	// The ledger: one row per run, keyed as the Workloads say, costing what they ran.
	wls, err := env.Kueue.KueueV1beta2().Workloads(team.Namespace()).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, wls.Items, 4)
	prices, err := db.PricesOver(ctx, flavor, string(gpu), start.Add(-time.Hour), time.Now().Add(time.Hour))
	require.NoError(t, err)
	want := map[string]bool{}
	var wantTotal money.USD
	for i := range wls.Items {
		r, ok := cost.Finished(&wls.Items[i])
		require.True(t, ok, "workload %s finished", wls.Items[i].Name)
		want[r.Key()] = true
		total, _ := cost.Price(r, prices)
		wantTotal += total
	}
	rows, err := db.LedgerRows(ctx, team.Name, start.Add(-time.Hour), time.Now().Add(time.Hour))
	require.NoError(t, err)
	got := map[string]bool{}
	var total money.USD
	for _, r := range rows {
		assert.False(t, got[r.RunKey], "run %s written twice", r.RunKey)
		got[r.RunKey] = true
		total += r.CostUSD
	}
	assert.Equal(t, want, got, "one ledger row per run")
	assert.Equal(t, wantTotal, total, "the ledger's total is the runs' cost")
	assert.Zero(t, count(`SELECT count(*) FROM (SELECT workload_uid, admitted_at FROM cost_ledger WHERE team = $1
		GROUP BY 1, 2 HAVING count(*) > 1) AS twice`, team.Name), "no run has two rows")
	assert.Contains(t, other.Log(), "leading: background loops started")
	t.Logf("done %s after start", time.Since(start).Round(time.Millisecond))
}
