package views

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestJobStatusShowsRecentEvents(t *testing.T) {
	cases := map[string]struct {
		events    []EventRow
		wantTable bool
	}{
		"events shown": {events: []EventRow{
			{Object: "Workload job-train-1a2b3", Reason: "Pending", Message: "couldn't assign flavors to pod set main", Age: "2m 05s", Count: 3, Warning: true},
			{Object: "Job train", Reason: "CreatedWorkload", Message: "Created Workload: team-vision/job-train-1a2b3", Age: "3m 00s", Count: 1},
		}, wantTable: true},
		"no events, no table": {},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			doc := render(t, JobStatusFragment(JobStatusPanel{URL: "/teams/vision/jobs/train/status", Phase: "queued", Events: tc.events}))
			assertCSPSafe(t, doc)
			table := byTestID(doc, "events")
			require.Equal(t, tc.wantTable, table.Length() == 1)
			if !tc.wantTable {
				return
			}
			pending := byTestID(doc, "event-Pending")
			assert.Equal(t, "couldn't assign flavors to pod set main", text(pending.Find(`[data-testid="event-message"]`)))
			assert.Contains(t, text(pending), "2m 05s")
			assert.Contains(t, text(pending), "Workload job-train-1a2b3")
			assert.True(t, pending.HasClass("event-warning"), "warnings stand out")
			assert.False(t, byTestID(doc, "event-CreatedWorkload").HasClass("event-warning"))
		})
	}
}
