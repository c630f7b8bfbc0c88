package web

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gantry-dev/gantry/internal/queue"
	"github.com/gantry-dev/gantry/views"
)

func TestFillCard(t *testing.T) {
	cases := map[string]struct {
		ov   queue.TeamOverview
		want views.TeamCard
	}{
		"active queue with GPU quota": {
			ov: queue.TeamOverview{
				ClusterQueue: "team-vision", Namespace: "team-vision", LocalQueue: "default", Active: true,
				Pending: 2, Admitted: 1,
				Flavors: []queue.FlavorQuota{{Flavor: "h100", Resource: "nvidia.com/gpu", Nominal: 8, Used: 10, Borrowed: 2, BorrowingLimit: queue.NoLimit}},
			},
			want: views.TeamCard{
				Name: "vision", Namespace: "team-vision", ClusterQueue: "team-vision", LocalQueue: "default",
				Pending: 2, Admitted: 1,
				Flavors: []views.FlavorQuota{{Flavor: "h100", Resource: "nvidia.com/gpu", Nominal: 8, Used: 10, Borrowed: 2, BorrowingLimit: -1}},
			},
		},
		"inactive queue keeps the default namespace": {
			ov:   queue.TeamOverview{ClusterQueue: "team-vision", InactiveReason: "flavor h100 not found"},
			want: views.TeamCard{Name: "vision", Namespace: "team-vision", ClusterQueue: "team-vision", QueueInactive: "flavor h100 not found"},
		},
		"inactive without a reason": {
			ov:   queue.TeamOverview{ClusterQueue: "team-vision"},
			want: views.TeamCard{Name: "vision", Namespace: "team-vision", ClusterQueue: "team-vision", QueueInactive: "Kueue reports the queue as inactive."},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			card := views.TeamCard{Name: "vision", Namespace: "team-vision"}
			fillCard(&card, tc.ov)
			if diff := cmp.Diff(tc.want, card); diff != "" {
				t.Errorf("card (-want +got):\n%s", diff)
			}
		})
	}
}
