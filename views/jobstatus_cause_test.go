package views

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// Where the failed container's last log lines would be, the page says why
// they cannot be shown.
func TestJobStatusSaysWhyTheLogTailIsMissing(t *testing.T) {
	cases := map[string]struct {
		cause             CauseView
		wantLog, wantNote string
	}{
		"log lines read": {
			cause:   CauseView{Kind: "exit-code", Words: "Container main of pod train-0 exited with code 2.", LogTail: []string{"epoch 3", "KeyError: 'label'"}},
			wantLog: "epoch 3KeyError: 'label'",
		},
		"log lines cannot be read": {
			cause:    CauseView{Kind: "exit-code", Words: "Container main of pod train-0 exited with code 2.", LogTailNote: "Its last log lines cannot be read now: the Kubernetes API server is not answering."},
			wantNote: "Its last log lines cannot be read now: the Kubernetes API server is not answering.",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			doc := render(t, JobStatusFragment(JobStatusPanel{URL: "/teams/vision/jobs/train/status", Phase: "failed", Cause: &tc.cause}))
			assert.Equal(t, tc.wantLog, text(byTestID(doc, "cause-log")))
			assert.Equal(t, tc.wantNote, text(byTestID(doc, "cause-log-note")))
		})
	}
}
