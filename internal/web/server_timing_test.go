package web

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gantry-dev/gantry/internal/servertiming"
)

// A signed-in page says in its Server-Timing header how long it waited on
// PostgreSQL (its session and records are read there) and in all.
func TestPagesNameTheirDatabaseWaitsInServerTiming(t *testing.T) {
	p := startPortal(t, portalOptions{})
	b := newBrowser(t)
	got := b.signIn(b.get(p.URL+"/profile"), "alice")
	require.Equal(t, http.StatusOK, got.Status)

	page := b.get(p.URL + "/profile")
	require.Equal(t, http.StatusOK, page.Status)
	header := page.Header.Get("Server-Timing")
	ms, calls := servertiming.Parse(header)
	assert.GreaterOrEqual(t, calls["db"], 1, "the session is read from PostgreSQL: %q", header)
	assert.Positive(t, ms["db"], "%q", header)
	assert.GreaterOrEqual(t, ms["total"], ms["db"], "%q", header)
}
