package kube

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gantry-dev/gantry/internal/naming"
)

func indexedJob(ns, name, owner string, created time.Time) *batchv1.Job {
	return &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, CreationTimestamp: metav1.NewTime(created),
		Labels: map[string]string{naming.LabelOwner: owner}}}
}

func refNames(refs []JobRef) []string {
	out := []string{}
	for _, r := range refs {
		out = append(out, r.Namespace+"/"+r.Name)
	}
	return out
}

func TestJobIndexPagesNewestFirstWithFilters(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	x := NewJobIndex()
	h := x.handler()
	// vision: v0..v5 a minute apart, alice every other; nlp: n0..n2 between them.
	for i := range 6 {
		owner := "bob"
		if i%2 == 0 {
			owner = "alice"
		}
		h.OnAdd(indexedJob("team-vision", fmt.Sprintf("v%d", i), owner, t0.Add(time.Duration(i)*time.Minute)), true)
	}
	for i := range 3 {
		h.OnAdd(indexedJob("team-nlp", fmt.Sprintf("n%d", i), "carol", t0.Add(time.Duration(2*i)*time.Minute+30*time.Second)), true)
	}
	same := indexedJob("team-nlp", "a-same-time", "carol", t0.Add(5*time.Minute))
	h.OnAdd(same, true)

	cases := map[string]struct {
		q         JobQuery
		want      []string
		wantTotal int
	}{
		"one team, first page": {q: JobQuery{Namespaces: []string{"team-vision"}, Limit: 2},
			want: []string{"team-vision/v5", "team-vision/v4"}, wantTotal: 6},
		"one team, last page": {q: JobQuery{Namespaces: []string{"team-vision"}, Offset: 4, Limit: 2},
			want: []string{"team-vision/v1", "team-vision/v0"}, wantTotal: 6},
		"owner": {q: JobQuery{Namespaces: []string{"team-vision"}, Owner: "alice", Limit: 10},
			want: []string{"team-vision/v4", "team-vision/v2", "team-vision/v0"}, wantTotal: 3},
		"kind with nothing": {q: JobQuery{Namespaces: []string{"team-vision"}, Kind: KindDeployment, Limit: 10}, want: []string{}, wantTotal: 0},
		"two teams merged, same time ordered by namespace": {q: JobQuery{Namespaces: []string{"team-vision", "team-nlp"}, Offset: 1, Limit: 4},
			want: []string{"team-vision/v5", "team-nlp/n2", "team-vision/v4", "team-vision/v3"}, wantTotal: 10},
		"past the end": {q: JobQuery{Namespaces: []string{"team-nlp"}, Offset: 4, Limit: 4}, want: []string{}, wantTotal: 4},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, total := x.Page(tc.q)
			if diff := cmp.Diff(tc.want, refNames(got)); diff != "" {
				t.Errorf("page (-want +got):\n%s", diff)
			}
			assert.Equal(t, tc.wantTotal, total)
		})
	}

	t.Run("a changed owner and a deletion follow", func(t *testing.T) {
		v4 := indexedJob("team-vision", "v4", "alice", t0.Add(4*time.Minute))
		moved := v4.DeepCopy()
		moved.Labels[naming.LabelOwner] = "bob"
		h.OnUpdate(v4, moved)
		h.OnDelete(indexedJob("team-vision", "v0", "alice", t0))
		got, total := x.Page(JobQuery{Namespaces: []string{"team-vision"}, Owner: "alice", Limit: 10})
		assert.Equal(t, []string{"team-vision/v2"}, refNames(got))
		assert.Equal(t, 1, total)
		_, total = x.Page(JobQuery{Namespaces: []string{"team-vision"}, Limit: 10})
		assert.Equal(t, 5, total)
	})
}

// BenchmarkJobIndexPage is one page of 50 of the job list at 10,000 jobs in
// three teams: the newest page and one 100 pages down.
func BenchmarkJobIndexPage(b *testing.B) {
	x := NewJobIndex()
	t0 := time.Now()
	teams := []string{"team-vision", "team-nlp", "team-speech"}
	for i := range 10_000 {
		x.Add(JobRef{Namespace: teams[i%3], Name: fmt.Sprintf("job-%05d", i), Kind: KindJob, Owner: fmt.Sprintf("user-%02d", i%50),
			Created: t0.Add(time.Duration(i) * time.Second).UnixNano()})
	}
	for _, offset := range []int{0, 5000} {
		b.Run(fmt.Sprintf("offset=%d", offset), func(b *testing.B) {
			for b.Loop() {
				if refs, _ := x.Page(JobQuery{Namespaces: teams, Offset: offset, Limit: 50}); len(refs) != 50 {
					b.Fatalf("%d refs", len(refs))
				}
			}
		})
	}
}
