package launch_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/gantry-dev/gantry/internal/catalog"
	"github.com/gantry-dev/gantry/internal/kube"
	"github.com/gantry-dev/gantry/internal/launch"
	"github.com/gantry-dev/gantry/internal/naming"
)

// teamJobsStub is a TeamJobLister over fixed objects that counts the Job
// lookups status makes.
type teamJobsStub struct {
	jobs    map[string][]*batchv1.Job
	sts     map[string][]*appsv1.StatefulSet
	lookups *atomic.Int64
}

// JobRefs pages the stub's objects through the job index the cache keeps.
func (s teamJobsStub) JobRefs(q kube.JobQuery) ([]kube.JobRef, int, error) {
	x := kube.NewJobIndex()
	for _, js := range s.jobs {
		for _, j := range js {
			r, _ := kube.JobRefOf(j)
			x.Add(r)
		}
	}
	for _, ss := range s.sts {
		for _, st := range ss {
			r, _ := kube.JobRefOf(st)
			x.Add(r)
		}
	}
	refs, total := x.Page(q)
	return refs, total, nil
}

func (s teamJobsStub) JobState(namespace, name string) (kube.JobState, error) {
	s.lookups.Add(1)
	for _, js := range s.jobs {
		for _, j := range js {
			if j.Namespace == namespace && j.Name == name {
				return kube.StateOf(j), nil
			}
		}
	}
	return kube.JobState{}, fmt.Errorf("job %s/%s not found", namespace, name)
}

func (s teamJobsStub) StatefulSet(namespace, name string) (*appsv1.StatefulSet, error) {
	for _, ss := range s.sts {
		for _, st := range ss {
			if st.Namespace == namespace && st.Name == name {
				return st, nil
			}
		}
	}
	return nil, fmt.Errorf("statefulset %s/%s not found", namespace, name)
}

func (s teamJobsStub) Deployment(namespace, name string) (*appsv1.Deployment, error) {
	return nil, fmt.Errorf("deployment %s/%s not found", namespace, name)
}
func (s teamJobsStub) Pods(_, _ string) ([]*corev1.Pod, error)                    { return nil, nil }
func (s teamJobsStub) WorkloadsOwnedBy(_, _, _ string) ([]*kueue.Workload, error) { return nil, nil }

func listMeta(team, name, owner string, created time.Time) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: naming.Namespace(team), Name: name, CreationTimestamp: metav1.NewTime(created),
		Labels: map[string]string{naming.LabelTeam: team, naming.LabelOwner: owner}}
}

// jobListCluster has 120 training jobs of vision (train-000 the oldest, every
// third by alice, the rest by bob), 5 of nlp and 2 notebooks of vision.
func jobListCluster() teamJobsStub {
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	s := teamJobsStub{jobs: map[string][]*batchv1.Job{}, sts: map[string][]*appsv1.StatefulSet{}, lookups: &atomic.Int64{}}
	for i := range 120 {
		owner := "bob"
		if i%3 == 0 {
			owner = "alice"
		}
		s.jobs["vision"] = append(s.jobs["vision"], &batchv1.Job{ObjectMeta: listMeta("vision", fmt.Sprintf("train-%03d", i), owner, t0.Add(time.Duration(i)*time.Minute))})
	}
	for i := range 5 {
		s.jobs["nlp"] = append(s.jobs["nlp"], &batchv1.Job{ObjectMeta: listMeta("nlp", fmt.Sprintf("nlp-%d", i), "carol", t0.Add(time.Duration(i)*time.Hour+30*time.Second))})
	}
	for i := range 2 {
		s.sts["vision"] = append(s.sts["vision"], &appsv1.StatefulSet{ObjectMeta: listMeta("vision", fmt.Sprintf("nb-%d", i), "alice", t0.Add(-time.Duration(i+1)*time.Hour))})
	}
	return s
}

func TestJobListPagesNewestFirstAndFiltersBeforeStatus(t *testing.T) {
	cases := map[string]struct {
		filter      launch.JobFilter
		page        int
		wantTotal   int
		wantPage    int
		wantPages   int
		wantFirst   []string // the first names on the page, in order
		wantLast    string
		wantRows    int
		wantTeamsOf map[string]string
	}{
		"first page of one team is its 50 newest": {
			filter: launch.JobFilter{Teams: []string{"vision"}}, page: 1,
			wantTotal: 122, wantPage: 1, wantPages: 3, wantRows: 50,
			wantFirst: []string{"train-119", "train-118", "train-117"}, wantLast: "train-070",
		},
		"second page continues where the first stopped": {
			filter: launch.JobFilter{Teams: []string{"vision"}}, page: 2,
			wantTotal: 122, wantPage: 2, wantPages: 3, wantRows: 50,
			wantFirst: []string{"train-069", "train-068"}, wantLast: "train-020",
		},
		"last page holds the rest, oldest last": {
			filter: launch.JobFilter{Teams: []string{"vision"}}, page: 3,
			wantTotal: 122, wantPage: 3, wantPages: 3, wantRows: 22,
			wantFirst: []string{"train-019"}, wantLast: "nb-1",
		},
		"a page past the end shows the last page": {
			filter: launch.JobFilter{Teams: []string{"vision"}}, page: 99,
			wantTotal: 122, wantPage: 3, wantPages: 3, wantRows: 22, wantFirst: []string{"train-019"}, wantLast: "nb-1",
		},
		"page zero is the first": {
			filter: launch.JobFilter{Teams: []string{"vision"}}, page: 0,
			wantTotal: 122, wantPage: 1, wantPages: 3, wantRows: 50, wantFirst: []string{"train-119"},
		},
		"two teams interleave by creation time": {
			filter: launch.JobFilter{Teams: []string{"vision", "nlp"}}, page: 1,
			wantTotal: 127, wantPage: 1, wantPages: 3, wantRows: 50,
			wantFirst:   []string{"nlp-4", "nlp-3", "nlp-2", "train-119"},
			wantTeamsOf: map[string]string{"nlp-4": "nlp", "train-119": "vision"},
		},
		"mine keeps the owner's jobs": {
			filter: launch.JobFilter{Teams: []string{"vision"}, Owner: "alice"}, page: 1,
			wantTotal: 42, wantPage: 1, wantPages: 1, wantRows: 42, wantFirst: []string{"train-117", "train-114"}, wantLast: "nb-1",
		},
		"kind keeps notebooks": {
			filter: launch.JobFilter{Teams: []string{"vision"}, Kind: catalog.KindNotebook}, page: 1,
			wantTotal: 2, wantPage: 1, wantPages: 1, wantRows: 2, wantFirst: []string{"nb-0", "nb-1"},
		},
		"nothing matches": {
			filter: launch.JobFilter{Teams: []string{"vision"}, Owner: "frank"}, page: 2,
			wantTotal: 0, wantPage: 1, wantPages: 1, wantRows: 0,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cluster := jobListCluster()
			r := launch.Reader{Jobs: cluster}
			got, err := r.JobList(tc.filter, tc.page, 50)
			require.NoError(t, err)
			assert.Equal(t, tc.wantTotal, got.Total, "total")
			assert.Equal(t, tc.wantPage, got.Page, "page")
			assert.Equal(t, tc.wantPages, got.Pages, "pages")
			require.Len(t, got.Statuses, tc.wantRows)
			for i, want := range tc.wantFirst {
				assert.Equal(t, want, got.Statuses[i].Name, "row %d", i)
			}
			if tc.wantLast != "" {
				assert.Equal(t, tc.wantLast, got.Statuses[len(got.Statuses)-1].Name, "last row")
			}
			for _, st := range got.Statuses {
				if tc.filter.Owner != "" {
					assert.Equal(t, tc.filter.Owner, st.Owner, "%s", st.Name)
				}
				if want, ok := tc.wantTeamsOf[st.Name]; ok {
					assert.Equal(t, want, st.Team, "%s", st.Name)
				}
			}
			assert.LessOrEqual(t, cluster.lookups.Load(), int64(tc.wantRows), "status is computed for the rows on the page only")
		})
	}
}

func TestJobListOrdersJobsCreatedTheSameSecondByName(t *testing.T) {
	at := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	s := teamJobsStub{jobs: map[string][]*batchv1.Job{}, lookups: &atomic.Int64{}}
	for _, i := range []int{7, 3, 199, 0, 150, 42} { // created in any order
		s.jobs["vision"] = append(s.jobs["vision"], &batchv1.Job{ObjectMeta: listMeta("vision", fmt.Sprintf("same-%03d", i), "bob", at)})
	}
	for i := 200; i < 300; i++ {
		s.jobs["vision"] = append(s.jobs["vision"], &batchv1.Job{ObjectMeta: listMeta("vision", fmt.Sprintf("same-%03d", i), "bob", at.Add(-time.Second))})
	}
	r := launch.Reader{Jobs: s}
	cases := map[string]struct {
		page int
		want []string
	}{
		"the same second sorts by name": {page: 1, want: []string{"same-000", "same-003", "same-007", "same-042"}},
		"the next page goes on by name": {page: 2, want: []string{"same-150", "same-199", "same-200", "same-201"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := r.JobList(launch.JobFilter{Teams: []string{"vision"}}, tc.page, 4)
			require.NoError(t, err)
			var names []string
			for _, st := range got.Statuses {
				names = append(names, st.Name)
			}
			assert.Equal(t, tc.want, names)
			assert.Equal(t, 106, got.Total)
		})
	}
}
