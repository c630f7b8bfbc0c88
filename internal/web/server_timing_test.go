package web

import (
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
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

// A page streams most of itself after its first byte: its Server-Timing
// trailer tells its whole time in the portal, the page written out
// included, beside the header's time to the first byte.
func TestAViewsWholeTimeComesInAServerTimingTrailer(t *testing.T) {
	const rest = 200 * time.Millisecond
	base := pageTimeoutsPortal(t, func(_ *handler, c *gin.Context) {
		c.Status(http.StatusOK)
		_, _ = c.Writer.WriteString("<!doctype html><title>first</title>")
		c.Writer.Flush()
		time.Sleep(rest)
		_, _ = c.Writer.WriteString("<p>the rest</p>")
	})
	resp, err := http.Get(base + "/up/page")
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Contains(t, string(body), "the rest")
	first, _ := servertiming.Parse(resp.Header.Get("Server-Timing"))
	whole, _ := servertiming.Parse(resp.Trailer.Get("Server-Timing"))
	assert.Less(t, first["total"], float64(rest.Milliseconds()), "the header times the first byte: %v", resp.Header)
	assert.GreaterOrEqual(t, whole["view"], float64(rest.Milliseconds()), "the trailer times the whole view: %v", resp.Trailer)
}
