package web

import (
	"fmt"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/kube"
)

// ClusterContact says whether the Kubernetes API server answers; while it
// does not, pages served from the informer caches say they may be out of
// date, and actions that change the cluster are refused in words.
type ClusterContact interface {
	Stale() (kube.Staleness, bool)
}

// apiStale is on list and status answers while the API server does not
// answer: they come from the portal's cache, which may be out of date.
type apiStale struct {
	// LastAnswer is when the API server last answered the portal.
	LastAnswer time.Time `json:"lastAnswer"`
	// Seconds is how long ago that was.
	Seconds float64 `json:"seconds"`
	// Message says the same in words.
	Message string `json:"message"`
}

// clusterStale is how long the API server has not answered, if it does not.
func (h *handler) clusterStale() (kube.Staleness, bool) {
	if h.Cluster == nil {
		return kube.Staleness{}, false
	}
	return h.Cluster.Stale()
}

// staleBanner is the sentence pages show while the API server does not
// answer, or "".
func (h *handler) staleBanner() string {
	s, stale := h.clusterStale()
	if !stale {
		return ""
	}
	return staleSentence(s)
}

func staleSentence(s kube.Staleness) string {
	return fmt.Sprintf("Cluster data may be out of date: the Kubernetes API server has not answered since %s (%s). Showing what the portal last saw.",
		s.LastAnswer.UTC().Format("15:04:05 MST"), agoInWords(s.For))
}

// agoInWords is a short duration as a person reads it: 40 s, 3 min, 2 h.
func agoInWords(d time.Duration) string {
	switch {
	case d < 2*time.Minute:
		return fmt.Sprintf("%d s", int(d.Seconds()))
	case d < 2*time.Hour:
		return fmt.Sprintf("%d min", int(d.Minutes()))
	default:
		return fmt.Sprintf("%d h", int(d.Hours()))
	}
}

// apiStaleOf is the stale object of an API answer, nil while the API
// server answers.
func (h *handler) apiStaleOf() *apiStale {
	s, stale := h.clusterStale()
	if !stale {
		return nil
	}
	return &apiStale{LastAnswer: s.LastAnswer, Seconds: s.For.Seconds(), Message: staleSentence(s)}
}

// clusterAnswers refuses an action that changes the cluster while the API
// server does not answer: at once and in words, instead of a request that
// hangs or fails half-way.
func (h *handler) clusterAnswers(c *gin.Context) {
	if s, stale := h.clusterStale(); stale {
		h.fail(c, fmt.Errorf("%s %s: API server silent since %s: %w", c.Request.Method, c.Request.URL.Path, s.LastAnswer.UTC().Format(time.RFC3339), kube.ErrUnreachable))
		return
	}
	c.Next()
}
