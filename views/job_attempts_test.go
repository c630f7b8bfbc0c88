package views

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The attempts card says which pod failed first and how long the job took
// to run again, as a person reads it.
func TestJobAttemptsShowFirstFailureAndRecovery(t *testing.T) {
	doc := render(t, JobAttempts(JobAttemptsView{Shown: true, FirstFailure: "pod ddp-1-abc (index 1) on node kwok-h100-1", Rows: []AttemptRow{
		{Number: 1, Started: "2026-11-30 20:29:40 UTC", Ended: "2026-11-30 20:29:58 UTC", Ending: "pod failed, retried:",
			Words: "Container main of pod ddp-1-abc exited with code 1.", FirstPod: "pod ddp-1-abc (index 1) on node kwok-h100-1", AlsoFailed: "ddp-0-xyz"},
		{Number: 2, Started: "2026-11-30 20:30:08 UTC", Ending: "running", Recovery: "10s"},
	}}))
	assert.Equal(t, "Failed first: pod ddp-1-abc (index 1) on node kwok-h100-1.", text(doc.Find(`[data-testid="first-failure"]`)))
	first := doc.Find(`[data-testid="attempt-1"]`)
	assert.Equal(t, "pod failed, retried: Container main of pod ddp-1-abc exited with code 1.", text(first.Find(`[data-testid="attempt-ending"]`)))
	assert.Equal(t, "pod ddp-1-abc (index 1) on node kwok-h100-1 then ddp-0-xyz", text(first.Find(`[data-testid="attempt-pod"]`)))
	assert.Equal(t, "10s", text(doc.Find(`[data-testid="attempt-2"] [data-testid="attempt-recovery"]`)))
	assert.Zero(t, render(t, JobAttempts(JobAttemptsView{})).Find(`[data-testid="attempts"]`).Length(), "hidden when attempts are not recorded")
}

func TestTeamRecoverySaysMedianAndP90(t *testing.T) {
	doc := render(t, TeamRecovery(TeamRecoveryView{Shown: true, Count: 4, Days: 30, Median: "12s", P90: "1m 05s"}))
	assert.Equal(t, "Over the last 30 days, 4 failed or preempted runs ran again after a median of 12s (p90 1m 05s).",
		text(doc.Find(`[data-testid="recovery-figures"]`)))
	doc = render(t, TeamRecovery(TeamRecoveryView{Shown: true, Days: 30}))
	assert.Equal(t, "No job of this team failed and ran again in the last 30 days.", text(doc.Find(`[data-testid="no-recovery"]`)))
}

func TestTeamWebhookFormOnlyForLeads(t *testing.T) {
	v := TeamWebhookView{Shown: true, URL: "https://chat.example.com/…", UpdatedBy: "bob", UpdatedAt: "2026-11-30 20:00:00 UTC",
		Deliveries: []WebhookDeliveryRow{{Created: "2026-11-30 20:01:00 UTC", Job: "train", Ending: "failed", Outcome: "given up after 5 attempts: the receiver answered 410 Gone", Failed: true}}}
	member := render(t, TeamWebhook(Nav{}, v))
	assert.Zero(t, member.Find("form").Length(), "members see no form")
	assert.Contains(t, text(member.Find(`[data-testid="webhook-deliveries"]`)), "given up after 5 attempts: the receiver answered 410 Gone")
	v.FormURL = "/teams/vision/webhook"
	lead := render(t, TeamWebhook(Nav{CSRFToken: "tok"}, v))
	action, _ := lead.Find("form").Attr("action")
	assert.Equal(t, "/teams/vision/webhook", action)
}

func TestOutsideJobsAreMarked(t *testing.T) {
	doc := render(t, JobOutsideMark(true))
	assert.Equal(t, "created outside Gantry", text(doc.Find(`[data-testid="outside-gantry"]`)))
	var row strings.Builder
	require.NoError(t, JobListPage(Nav{}, JobListProps{Jobs: []JobRow{{Name: "train", Team: "vision", Owner: "erin", Outside: true}}}).Render(t.Context(), &row))
	assert.Contains(t, row.String(), `erin <span class="muted" data-testid="outside-gantry">`, "the owner and the mark read as two words")
	assert.Zero(t, render(t, JobOutsideMark(false)).Find(`[data-testid="outside-gantry"]`).Length())
}
