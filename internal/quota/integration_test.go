package quota_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/gantry-dev/gantry/internal/audit"
	"github.com/gantry-dev/gantry/internal/devcluster/stacktest"
	"github.com/gantry-dev/gantry/internal/kube"
	"github.com/gantry-dev/gantry/internal/naming"
	"github.com/gantry-dev/gantry/internal/problem"
	"github.com/gantry-dev/gantry/internal/quota"
	"github.com/gantry-dev/gantry/internal/roster"
	"github.com/gantry-dev/gantry/internal/store"
	"github.com/gantry-dev/gantry/internal/teams"
)

const (
	h100 = "h100-sxm-ib-training"
	gpu  = "nvidia.com/gpu"
)

// fixture is a throwaway team in a cohort of its own, a fresh database and
// a quota service reading a movable clock.
type fixture struct {
	env   *stacktest.Env
	dsn   string
	db    *store.Store
	team  string
	clock *clock
	board *quota.Board
}

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *clock) Advance(d time.Duration) { c.mu.Lock(); defer c.mu.Unlock(); c.now = c.now.Add(d) }

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	env := stacktest.Stack(t)
	dsn := stacktest.Postgres(t)
	db := openStore(t, dsn)
	require.NoError(t, store.Migrate(ctx, db.SQL(), slog.New(slog.NewTextHandler(io.Discard, nil))))

	cache, err := kube.NewCache(env.Kueue, 0)
	require.NoError(t, err)
	nodes := kube.NewNodeCache(env.Kube, 0)
	cctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	cache.Start(cctx)
	nodes.Start(cctx)
	require.NoError(t, cache.WaitForSync(ctx))
	require.NoError(t, nodes.WaitForSync(ctx))
	// Wait times come from the job cache's Workload informer, as in the portal.
	waits, err := kube.NewJobCache(env.Kube, env.Kueue, 0)
	require.NoError(t, err)
	waits.Start(cctx)
	require.NoError(t, waits.WaitForSync(ctx))
	flavors, err := teams.FlavorsOf(cache.ResourceFlavors(), nodes.FlavorCapacity)
	require.NoError(t, err)

	b := make([]byte, 3)
	_, _ = rand.Read(b)
	name := "q" + hex.EncodeToString(b)
	p, err := teams.NewProvisioner(env.RESTConfig, "")
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Delete(context.Background(), name) })
	team := teams.Spec{Team: roster.Team{Name: name, MemberGroups: []string{name + "-researchers"}, LeadGroups: []string{name + "-leads"}},
		Quotas: teams.ZeroQuotas(flavors), BorrowCPUAndMemory: true}
	require.NoError(t, p.Apply(ctx, team, "cohort-"+name, flavors, teams.ApplyOptions{KeepQuota: true}))
	_, err = db.SaveTeam(ctx, roster.Team{Name: name, DisplayName: name, MemberGroups: team.MemberGroups, LeadGroups: team.LeadGroups})
	require.NoError(t, err)
	_, err = db.SaveTeam(ctx, roster.Team{Name: "other-" + name})
	require.NoError(t, err)
	require.NoError(t, db.ReplaceCeilings(ctx, name, []store.TeamCeiling{{Flavor: h100, Resource: gpu, Ceiling: 4}}))
	return &fixture{env: env, dsn: dsn, db: db, team: name, clock: &clock{now: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)},
		board: quota.NewBoard(cache, nodes.FlavorCapacity, waits)}
}

func openStore(t *testing.T, dsn string) *store.Store {
	t.Helper()
	db, err := store.Open(context.Background(), dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// service is one portal replica: its own connection pool, same database.
func (f *fixture) service(t *testing.T) *quota.Service {
	db := openStore(t, f.dsn)
	cqs := &quota.ClusterQueues{Kueue: f.env.Kueue, Kube: f.env.Kube}
	return quota.NewService(db, cqs, audit.New(db, f.clock.Now), slog.New(slog.NewTextHandler(io.Discard, nil)), quota.WithClock(f.clock.Now))
}

func (f *fixture) researcher(name string) quota.Actor {
	return quota.Actor{Username: name, MemberOf: []string{f.team}}
}

func (f *fixture) lead(name string) quota.Actor {
	return quota.Actor{Username: name, MemberOf: []string{f.team}, LeadOf: []string{f.team}}
}

func (f *fixture) nominal(t *testing.T) int64 {
	t.Helper()
	cq, err := f.env.Kueue.KueueV1beta2().ClusterQueues().Get(context.Background(), naming.ClusterQueue(f.team), metav1.GetOptions{})
	require.NoError(t, err)
	for _, fl := range cq.Spec.ResourceGroups[0].Flavors {
		if string(fl.Name) != h100 {
			continue
		}
		for _, r := range fl.Resources {
			if r.Name == gpu {
				return r.NominalQuota.Value()
			}
		}
	}
	t.Fatalf("no %s line for %s", gpu, h100)
	return 0
}

func (f *fixture) file(t *testing.T, s *quota.Service, by quota.Actor, delta int64, until *time.Time) store.QuotaRequest {
	t.Helper()
	r, err := s.File(context.Background(), by, quota.NewRequest{Team: f.team, Flavor: h100, Resource: gpu, Delta: delta, Until: until, Reason: "ablation study"})
	require.NoError(t, err)
	return r
}

func TestApprovedRequestRaisesQuotaAndAdmitsAPendingJob(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	jobs := f.env.Kube.BatchV1().Jobs(naming.Namespace(f.team))
	_, err := jobs.Create(ctx, gpuJob(f.team, "train", 2), metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		wls, err := f.env.Kueue.KueueV1beta2().Workloads(naming.Namespace(f.team)).List(ctx, metav1.ListOptions{})
		return err == nil && len(wls.Items) == 1 && hasCondition(wls.Items[0].Status.Conditions, kueue.WorkloadQuotaReserved, metav1.ConditionFalse)
	}, time.Minute, 200*time.Millisecond, "the job waits for quota")

	require.Eventually(t, func() bool {
		line, err := f.board.Line(f.team, h100, gpu)
		return err == nil && line.Pending == 1 && line.LongestWait > 0
	}, 30*time.Second, 200*time.Millisecond, "the lead sees the waiting job from the cache")
	line, err := f.board.Line(f.team, h100, gpu)
	require.NoError(t, err)
	assert.Zero(t, line.Nominal)
	assert.Equal(t, int64(16), line.Physical, "two H100 nodes with 8 GPUs each")
	assert.True(t, line.ExceedsPhysical(17))
	assert.False(t, line.ExceedsPhysical(2))

	s := f.service(t)
	r := f.file(t, s, f.researcher("alice"), 2, nil)
	decided, err := s.Decide(ctx, f.lead("bob"), r.ID, true, "go ahead")
	require.NoError(t, err)
	assert.Equal(t, store.QuotaApproved, decided.Status)
	assert.Equal(t, int64(2), f.nominal(t))

	rq, err := f.env.Kube.CoreV1().ResourceQuotas(naming.Namespace(f.team)).Get(ctx, naming.ResourceQuota, metav1.GetOptions{})
	require.NoError(t, err)
	hard := rq.Spec.Hard[corev1.ResourceName("requests."+gpu)]
	assert.Equal(t, int64(2), hard.Value(), "the ResourceQuota follows the ClusterQueue")

	require.Eventually(t, func() bool {
		j, err := jobs.Get(ctx, "train", metav1.GetOptions{})
		return err == nil && j.Spec.Suspend != nil && !*j.Spec.Suspend
	}, time.Minute, 200*time.Millisecond, "the job is admitted once the quota is there")

	notes, err := f.db.Notifications(ctx, "alice", 10)
	require.NoError(t, err)
	require.Len(t, notes, 1)
	assert.Contains(t, notes[0].Text, "bob approved your request")
	assert.Contains(t, notes[0].Text, "go ahead")
	entries, more, err := f.db.AuditPage(ctx, store.AuditQuery{Team: f.team})
	require.NoError(t, err)
	assert.False(t, more)
	var actions []string
	for _, e := range entries {
		actions = append(actions, e.Action)
	}
	assert.ElementsMatch(t, []string{quota.ActionRequest, quota.ActionApprove, quota.ActionGrant}, actions)
}

func TestWhoMayDecide(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	s := f.service(t)
	cases := map[string]struct {
		requester quota.Actor
		decider   quota.Actor
		delta     int64
		approve   bool
		allowed   bool
	}{
		"lead within the ceiling":         {requester: f.researcher("alice"), decider: f.lead("bob"), delta: 1, approve: true, allowed: true},
		"lead above the ceiling":          {requester: f.researcher("alice"), decider: f.lead("bob"), delta: 9, approve: true},
		"lead rejects above the ceiling":  {requester: f.researcher("alice"), decider: f.lead("bob"), delta: 9, allowed: true},
		"lead of another team":            {requester: f.researcher("alice"), decider: quota.Actor{Username: "dave", LeadOf: []string{"other-" + f.team}}, delta: 1, approve: true},
		"lead approving their own":        {requester: f.lead("bob"), decider: f.lead("bob"), delta: 1, approve: true},
		"admin approving their own":       {requester: quota.Actor{Username: "erin", Admin: true, MemberOf: []string{f.team}}, decider: quota.Actor{Username: "erin", Admin: true}, delta: 1, approve: true},
		"researcher":                      {requester: f.researcher("alice"), decider: f.researcher("carl"), delta: 1, approve: true},
		"admin above the ceiling":         {requester: f.researcher("alice"), decider: quota.Actor{Username: "erin", Admin: true}, delta: 9, approve: true, allowed: true},
		"lead giving back below the ceil": {requester: f.researcher("alice"), decider: f.lead("bob"), delta: -1, approve: true, allowed: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if f.nominal(t) < 2 { // so that giving back is possible whatever ran before
				top := f.file(t, s, f.researcher("alice"), 2, nil)
				_, err := s.Decide(ctx, quota.Actor{Username: "erin", Admin: true}, top.ID, true, "base")
				require.NoError(t, err)
			}
			before := f.nominal(t)
			require.NoError(t, f.db.ReplaceCeilings(ctx, f.team, []store.TeamCeiling{{Flavor: h100, Resource: gpu, Ceiling: before + 4}}))
			r := f.file(t, s, tc.requester, tc.delta, nil)
			_, err := s.Decide(ctx, tc.decider, r.ID, tc.approve, "decided")
			got, gerr := f.db.QuotaRequestByID(ctx, r.ID)
			require.NoError(t, gerr)
			if !tc.allowed {
				var denied *quota.DeniedError
				require.ErrorAs(t, err, &denied)
				assert.NotEmpty(t, denied.Reason)
				assert.Equal(t, store.QuotaOpen, got.Status, "a refused decision changes nothing")
				assert.Equal(t, before, f.nominal(t))
				return
			}
			require.NoError(t, err)
			if tc.approve {
				assert.Equal(t, before+tc.delta, f.nominal(t))
			} else {
				assert.Equal(t, store.QuotaRejected, got.Status)
				assert.Equal(t, before, f.nominal(t))
			}
		})
	}
}

func TestExpiringGrantIsRevertedOnTimeEvenAfterARestart(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	s := f.service(t)
	until := f.clock.Now().Add(2 * time.Hour)
	r := f.file(t, s, f.researcher("alice"), 3, &until)
	_, err := s.Decide(ctx, f.lead("bob"), r.ID, true, "for the deadline")
	require.NoError(t, err)
	require.Equal(t, int64(3), f.nominal(t))

	f.clock.Advance(time.Hour)
	n, err := s.ExpireDue(ctx)
	require.NoError(t, err)
	assert.Zero(t, n, "nothing ends before its time")
	assert.Equal(t, int64(3), f.nominal(t))

	restarted := f.service(t) // a new portal process on the same database
	f.clock.Advance(time.Hour)
	n, err = restarted.ExpireDue(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	assert.Equal(t, int64(0), f.nominal(t), "the grant is subtracted again")
	n, err = s.ExpireDue(ctx)
	require.NoError(t, err)
	assert.Zero(t, n, "a grant is reverted once")
	assert.Equal(t, int64(0), f.nominal(t))

	g, err := f.db.GrantByRequest(ctx, r.ID)
	require.NoError(t, err)
	require.NotNil(t, g.RevertedAt)
	entries, _, err := f.db.AuditPage(ctx, store.AuditQuery{Action: quota.ActionExpire})
	require.NoError(t, err)
	require.Len(t, entries, 1)
	assert.Equal(t, audit.SystemActor, entries[0].Actor)
}

func TestRacingApprovalsOnOneClusterQueueBothTakeEffect(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	replicas := []*quota.Service{f.service(t), f.service(t), f.service(t), f.service(t)}
	var ids []int64
	for i := range replicas {
		ids = append(ids, f.file(t, replicas[0], f.researcher("alice"), int64(i%2+1), nil).ID)
	}
	var wg sync.WaitGroup
	errs := make([]error, len(replicas))
	for i, s := range replicas {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = s.Decide(ctx, quota.Actor{Username: "erin", Admin: true}, ids[i], true, "ok")
		}()
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
	assert.Equal(t, int64(1+2+1+2), f.nominal(t), "no approval is lost")
}

func TestFilingIsValidated(t *testing.T) {
	f := newFixture(t)
	s := f.service(t)
	past := f.clock.Now().Add(-time.Hour)
	_, err := s.File(context.Background(), quota.Actor{Username: "zoe", MemberOf: []string{"elsewhere"}},
		quota.NewRequest{Team: f.team, Flavor: h100, Resource: "cpu", Delta: 0, Until: &past})
	var verr problem.Fields
	require.ErrorAs(t, err, &verr)
	for _, field := range []string{quota.FieldTeam, quota.FieldResource, quota.FieldDelta, quota.FieldUntil, quota.FieldReason} {
		assert.NotEmpty(t, verr[field], field)
	}
}

// gpuJob is a suspended Job of team asking for GPUs on any pool.
func gpuJob(team, name string, gpus int64) *batchv1.Job {
	return stacktest.CompliantJob(team, name, corev1.ResourceList{gpu: *resource.NewQuantity(gpus, resource.DecimalSI)})
}

func hasCondition(conds []metav1.Condition, typ string, status metav1.ConditionStatus) bool {
	for _, c := range conds {
		if c.Type == typ && c.Status == status {
			return true
		}
	}
	return false
}
