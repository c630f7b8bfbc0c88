package queue

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/gantry-dev/gantry/internal/kube"
	"github.com/gantry-dev/gantry/internal/naming"
)

// cqBuilder builds ClusterQueues for tests, one flavor per Flavor call.
type cqBuilder struct{ cq kueue.ClusterQueue }

func makeCQ(name, team string) *cqBuilder {
	b := &cqBuilder{}
	b.cq.Name = name
	if team != "" {
		b.cq.Labels = map[string]string{naming.LabelTeam: team}
	}
	b.cq.Spec.ResourceGroups = []kueue.ResourceGroup{{}}
	return b
}

func (b *cqBuilder) Cohort(c string) *cqBuilder {
	b.cq.Spec.CohortName = kueue.CohortReference(c)
	return b
}

// Flavor adds a flavor with resources given as name, nominal pairs.
func (b *cqBuilder) Flavor(name string, nominal ...string) *cqBuilder {
	fq := kueue.FlavorQuotas{Name: kueue.ResourceFlavorReference(name)}
	for i := 0; i+1 < len(nominal); i += 2 {
		fq.Resources = append(fq.Resources, kueue.ResourceQuota{
			Name: corev1.ResourceName(nominal[i]), NominalQuota: resource.MustParse(nominal[i+1]),
		})
	}
	b.cq.Spec.ResourceGroups[0].Flavors = append(b.cq.Spec.ResourceGroups[0].Flavors, fq)
	return b
}

func (b *cqBuilder) BorrowingLimit(flavor, res, q string) *cqBuilder {
	for i, f := range b.cq.Spec.ResourceGroups[0].Flavors {
		for j, r := range f.Resources {
			if string(f.Name) == flavor && string(r.Name) == res {
				l := resource.MustParse(q)
				b.cq.Spec.ResourceGroups[0].Flavors[i].Resources[j].BorrowingLimit = &l
			}
		}
	}
	return b
}

func (b *cqBuilder) Usage(flavor, res, total, borrowed string) *cqBuilder {
	b.cq.Status.FlavorsUsage = append(b.cq.Status.FlavorsUsage, usage(flavor, res, total, borrowed))
	return b
}

func (b *cqBuilder) Reservation(flavor, res, total string) *cqBuilder {
	b.cq.Status.FlavorsReservation = append(b.cq.Status.FlavorsReservation, usage(flavor, res, total, "0"))
	return b
}

func (b *cqBuilder) Workloads(pending, reserving, admitted int32) *cqBuilder {
	b.cq.Status.PendingWorkloads, b.cq.Status.ReservingWorkloads, b.cq.Status.AdmittedWorkloads = pending, reserving, admitted
	return b
}

func (b *cqBuilder) Inactive(reason, msg string) *cqBuilder {
	b.cq.Status.Conditions = append(b.cq.Status.Conditions, metav1.Condition{
		Type: kueue.ClusterQueueActive, Status: metav1.ConditionFalse, Reason: reason, Message: msg,
	})
	return b
}

func (b *cqBuilder) Obj() *kueue.ClusterQueue { return b.cq.DeepCopy() }

func usage(flavor, res, total, borrowed string) kueue.FlavorUsage {
	return kueue.FlavorUsage{
		Name: kueue.ResourceFlavorReference(flavor),
		Resources: []kueue.ResourceUsage{{
			Name: corev1.ResourceName(res), Total: resource.MustParse(total), Borrowed: resource.MustParse(borrowed),
		}},
	}
}

func makeLQ(ns, name, cq string) *kueue.LocalQueue {
	lq := &kueue.LocalQueue{}
	lq.Namespace, lq.Name, lq.Spec.ClusterQueue = ns, name, kueue.ClusterQueueReference(cq)
	return lq
}

func TestOverview(t *testing.T) {
	cases := map[string]struct {
		cq   *kueue.ClusterQueue
		lqs  []*kueue.LocalQueue
		want TeamOverview
	}{
		"idle queue in a cohort borrows nothing and has no limit": {
			cq: makeCQ("team-vision", "vision").Cohort("gantry").
				Flavor("h100", "nvidia.com/gpu", "16", "cpu", "128", "memory", "1Ti").Obj(),
			lqs: []*kueue.LocalQueue{makeLQ("team-vision", "default", "team-vision")},
			want: TeamOverview{
				Team: "vision", ClusterQueue: "team-vision", Cohort: "gantry",
				Namespace: "team-vision", LocalQueue: "default",
				LocalQueues: []QueueRef{{Namespace: "team-vision", Name: "default"}},
				Active:      true,
				Flavors: []FlavorQuota{
					{Flavor: "h100", Resource: "nvidia.com/gpu", Nominal: 16, BorrowingLimit: NoLimit},
					{Flavor: "h100", Resource: "cpu", Nominal: 128, BorrowingLimit: NoLimit},
					{Flavor: "h100", Resource: "memory", Nominal: 1 << 40, BorrowingLimit: NoLimit},
				},
			},
		},
		"usage, borrowing and counts per flavor": {
			cq: makeCQ("team-nlp", "nlp").Cohort("gantry").
				Flavor("h100", "nvidia.com/gpu", "8").
				Flavor("a100", "nvidia.com/gpu", "4").
				BorrowingLimit("h100", "nvidia.com/gpu", "4").
				Usage("h100", "nvidia.com/gpu", "11", "3").
				Reservation("h100", "nvidia.com/gpu", "12").
				Usage("a100", "nvidia.com/gpu", "1", "0").
				Reservation("a100", "nvidia.com/gpu", "1").
				Workloads(3, 4, 3).Obj(),
			want: TeamOverview{
				Team: "nlp", ClusterQueue: "team-nlp", Cohort: "gantry", Active: true,
				Pending: 3, Reserving: 4, Admitted: 3,
				Flavors: []FlavorQuota{
					{Flavor: "h100", Resource: "nvidia.com/gpu", Nominal: 8, Used: 11, Reserved: 12, Borrowed: 3, BorrowingLimit: 4},
					{Flavor: "a100", Resource: "nvidia.com/gpu", Nominal: 4, Used: 1, Reserved: 1, BorrowingLimit: NoLimit},
				},
			},
		},
		"no cohort means no borrowing; fractional CPU rounds up": {
			cq: makeCQ("team-solo", "solo").Flavor("cpu-pool", "cpu", "1500m").Usage("cpu-pool", "cpu", "500m", "0").Obj(),
			want: TeamOverview{
				Team: "solo", ClusterQueue: "team-solo", Active: true,
				Flavors: []FlavorQuota{{Flavor: "cpu-pool", Resource: "cpu", Nominal: 2, Used: 1}},
			},
		},
		"inactive queue says why; default queue in team namespace preferred": {
			cq: makeCQ("team-vision", "vision").Inactive("FlavorNotFound", "Can't admit new workloads: references missing ResourceFlavor(s): h100.").Obj(),
			lqs: []*kueue.LocalQueue{
				makeLQ("shared", "vision", "team-vision"),
				makeLQ("team-vision", "default", "team-vision"),
			},
			want: TeamOverview{
				Team: "vision", ClusterQueue: "team-vision", Namespace: "team-vision", LocalQueue: "default",
				LocalQueues:    []QueueRef{{Namespace: "shared", Name: "vision"}, {Namespace: "team-vision", Name: "default"}},
				InactiveReason: "Can't admit new workloads: references missing ResourceFlavor(s): h100.",
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := Overview(tc.want.Team, tc.cq, tc.lqs)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Overview() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAccelerators(t *testing.T) {
	o := TeamOverview{Flavors: []FlavorQuota{
		{Flavor: "h100", Resource: "nvidia.com/gpu"},
		{Flavor: "h100", Resource: "cpu"},
		{Flavor: "a100-mig", Resource: "nvidia.com/mig-1g.10gb"},
		{Flavor: "mi300", Resource: "amd.com/gpu"},
		{Flavor: "h100", Resource: "memory"},
	}}
	var got []string
	for _, f := range o.Accelerators() {
		got = append(got, f.Flavor+"/"+f.Resource)
	}
	assert.Equal(t, []string{"h100/nvidia.com/gpu", "a100-mig/nvidia.com/mig-1g.10gb", "mi300/amd.com/gpu"}, got)
}

// fakeSource is an in-memory Source; the real cache is tested in internal/kube.
type fakeSource struct {
	cqs      []*kueue.ClusterQueue
	lqs      []*kueue.LocalQueue
	unsynced bool
}

func (f fakeSource) HasSynced() bool { return !f.unsynced }

func (f fakeSource) ClusterQueue(name string) (*kueue.ClusterQueue, error) {
	for _, cq := range f.cqs {
		if cq.Name == name {
			return cq, nil
		}
	}
	return nil, kube.MapError(apierrors.NewNotFound(kueue.GroupVersion.WithResource("clusterqueues").GroupResource(), name))
}

func (f fakeSource) TeamClusterQueues(team string) ([]*kueue.ClusterQueue, error) {
	var out []*kueue.ClusterQueue
	for _, cq := range f.cqs {
		if cq.Labels[naming.LabelTeam] == team {
			out = append(out, cq)
		}
	}
	return out, nil
}

func (f fakeSource) LocalQueuesFor(clusterQueue string) ([]*kueue.LocalQueue, error) {
	var out []*kueue.LocalQueue
	for _, lq := range f.lqs {
		if string(lq.Spec.ClusterQueue) == clusterQueue {
			out = append(out, lq)
		}
	}
	return out, nil
}

func TestReaderTeamOverview(t *testing.T) {
	src := fakeSource{
		cqs: []*kueue.ClusterQueue{
			makeCQ("aaa-vision-extra", "vision").Obj(),
			makeCQ("team-vision", "vision").Flavor("h100", "nvidia.com/gpu", "16").Obj(),
			makeCQ("team-unlabelled", "").Flavor("l4", "nvidia.com/gpu", "2").Obj(),
			makeCQ("team-stolen", "other").Obj(),
			makeCQ("queue-for-nlp", "nlp").Obj(),
		},
		lqs: []*kueue.LocalQueue{makeLQ("team-vision", "default", "team-vision")},
	}
	cases := map[string]struct {
		team     string
		wantCQ   string
		wantLQ   string
		notFound bool
	}{
		"labelled and conventionally named wins": {team: "vision", wantCQ: "team-vision", wantLQ: "default"},
		"labelled with another name":             {team: "nlp", wantCQ: "queue-for-nlp"},
		"unlabelled falls back to the name":      {team: "unlabelled", wantCQ: "team-unlabelled"},
		"name taken by another team":             {team: "stolen", notFound: true},
		"no queue at all":                        {team: "ghost", notFound: true},
	}
	r := NewReader(src)
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := r.TeamOverview(tc.team)
			if tc.notFound {
				require.Error(t, err)
				assert.True(t, errors.Is(err, kube.ErrNotFound), "want ErrNotFound, got %v", err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.wantCQ, got.ClusterQueue)
			assert.Equal(t, tc.wantLQ, got.LocalQueue)
		})
	}

	t.Run("unsynced cache is not mistaken for a team without a queue", func(t *testing.T) {
		src.unsynced = true
		_, err := NewReader(src).TeamOverview("vision")
		assert.ErrorIs(t, err, kube.ErrNotSynced)
		assert.NotErrorIs(t, err, kube.ErrNotFound)
	})
}
