package stacktest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/gantry-dev/gantry/internal/devcluster"
	"github.com/gantry-dev/gantry/internal/naming"
	"github.com/gantry-dev/gantry/internal/roster"
)

// TeamSpec describes a throwaway team.
type TeamSpec struct {
	// Cohort the team's ClusterQueue joins; empty gives the team a cohort
	// of its own, so no other test can borrow from it.
	Cohort string
	// Quotas is the nominal quota per flavor (pool name), e.g.
	// {"h100-sxm-ib-training": {"nvidia.com/gpu": resource.MustParse("4")}}.
	Quotas map[string]corev1.ResourceList
	// MemberGroups and LeadGroups are the IdP groups bound to the team's
	// roles; empty means <name>-researchers and <name>-leads.
	MemberGroups, LeadGroups []string
}

// Team creates a throwaway team the way bootstrap creates the real ones —
// namespace team-<name> (Pod Security restricted), ClusterQueue, LocalQueue
// naming.LocalQueue, RoleBindings for its member and lead groups — waits
// until its queues are active, and deletes it when the test ends.
func (e *Env) Team(t testing.TB, spec TeamSpec) devcluster.Team {
	t.Helper()
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	name := "t" + hex.EncodeToString(b)
	team := devcluster.Team{Entry: roster.Entry{
		Team: roster.Team{
			Name:         name,
			DisplayName:  "Test team " + t.Name(),
			CostCenter:   "CC-TEST",
			MemberGroups: []string{name + "-researchers"},
			LeadGroups:   []string{name + "-leads"},
		},
		Quotas: spec.Quotas,
	}}
	if len(spec.MemberGroups) > 0 {
		team.MemberGroups = spec.MemberGroups
	}
	if len(spec.LeadGroups) > 0 {
		team.LeadGroups = spec.LeadGroups
	}
	cohort := spec.Cohort
	if cohort == "" {
		cohort = "cohort-" + name
	}
	pools, err := devcluster.LoadPools(e.Layout.Deploy("local", "pools.yaml"))
	if err != nil {
		t.Fatalf("stacktest: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := devcluster.ApplyTeam(ctx, e.RESTConfig, cohort, team, pools); err != nil {
		t.Fatalf("stacktest: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := devcluster.DeleteTeam(ctx, e.RESTConfig, team); err != nil {
			t.Errorf("stacktest: %v", err)
		}
	})
	for {
		lq, lqErr := e.Kueue.KueueV1beta2().LocalQueues(team.Namespace()).Get(ctx, naming.LocalQueue, metav1.GetOptions{})
		cq, cqErr := e.Kueue.KueueV1beta2().ClusterQueues().Get(ctx, team.ClusterQueue(), metav1.GetOptions{})
		_, saErr := e.Kube.CoreV1().ServiceAccounts(team.Namespace()).Get(ctx, "default", metav1.GetOptions{})
		if lqErr == nil && cqErr == nil && saErr == nil &&
			active(cq.Status.Conditions) && active(lq.Status.Conditions) {
			return team
		}
		select {
		case <-ctx.Done():
			t.Fatalf("stacktest: team %s not ready: ClusterQueue %v, LocalQueue %v, service account %v", name, cqErr, lqErr, saErr)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func active(conds []metav1.Condition) bool {
	for _, c := range conds {
		if c.Type == kueue.ClusterQueueActive && c.Status == metav1.ConditionTrue {
			return true
		}
	}
	return false
}
