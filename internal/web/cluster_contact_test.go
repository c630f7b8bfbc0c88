package web

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gantry-dev/gantry/internal/kube"
)

// silentFor is an API server that last answered at a fixed moment.
type silentFor struct {
	s     kube.Staleness
	stale bool
}

func (f silentFor) Stale() (kube.Staleness, bool) { return f.s, f.stale }

func TestStaleSentenceSaysSinceWhenAndHowLong(t *testing.T) {
	at := time.Date(2026, 12, 1, 22, 51, 7, 0, time.UTC)
	cases := map[string]struct {
		ago  time.Duration
		want string
	}{
		"seconds": {40 * time.Second, "(40 s)"},
		"minutes": {3*time.Minute + 10*time.Second, "(3 min)"},
		"hours":   {5 * time.Hour, "(5 h)"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, "Cluster data may be out of date: the Kubernetes API server has not answered since 22:51:07 UTC "+tc.want+
				". Showing what the portal last saw.", staleSentence(kube.Staleness{LastAnswer: at, For: tc.ago}))
		})
	}
}

// TestActionsAreRefusedInWordsWhileTheAPIServerIsSilent: an action that
// changes the cluster gets 503 with code cluster_unreachable at once; the
// same action runs once the API server answers.
func TestActionsAreRefusedInWordsWhileTheAPIServerIsSilent(t *testing.T) {
	gin.SetMode(gin.TestMode)
	contact := &silentFor{s: kube.Staleness{LastAnswer: time.Now().Add(-40 * time.Second), For: 40 * time.Second}, stale: true}
	h := &handler{Deps: Deps{Cluster: contact, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}}
	r := gin.New()
	ran := 0
	r.DELETE("/api/v1/teams/:team/jobs/:name", h.clusterAnswers, func(c *gin.Context) { ran++; c.Status(http.StatusNoContent) })

	rec := httptest.NewRecorder()
	r.ServeHTTP(rec, httptest.NewRequest(http.MethodDelete, "/api/v1/teams/nlp/jobs/train", nil))
	require.Equal(t, http.StatusServiceUnavailable, rec.Code)
	var body apiErrorBody
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &body))
	assert.Equal(t, "cluster_unreachable", body.Code)
	assert.Equal(t, "Cluster not answering", body.Error)
	assert.Equal(t, "The Kubernetes API server is not answering, so nothing was changed. Try again in a minute; the job pages say when it answers again.", body.Message)
	assert.Zero(t, ran, "nothing was tried")

	contact.stale = false
	rec = httptest.NewRecorder()
	r.ServeHTTP(rec, httptest.NewRequest(http.MethodDelete, "/api/v1/teams/nlp/jobs/train", nil))
	assert.Equal(t, http.StatusNoContent, rec.Code)
	assert.Equal(t, 1, ran)
}
