package web

import (
	"errors"
	"fmt"
	"github.com/gantry-dev/gantry/internal/problem"
	"net/http"
	"net/http/httputil"
	"slices"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/auth"
	"github.com/gantry-dev/gantry/internal/catalog"
	"github.com/gantry-dev/gantry/internal/proxy"
	"github.com/gantry-dev/gantry/views"
)

// errCrossOrigin is a WebSocket upgrade or a changing request to a
// notebook sent by a page of another origin.
var errCrossOrigin = problem.New("request from another origin", problem.Problem{Kind: problem.Forbidden, Title: "Request refused",
	Detail: "This request to the notebook came from a page of another site, so it was refused."})

// notebookOpenURL is where a notebook opens; its template sets this as the
// server's base URL, so the paths inside it pass through unchanged.
func notebookOpenURL(team, name string) string { return catalog.NotebookBaseURL(team, name) }

// notebookOpenRedirect adds the trailing slash the notebook's base URL has.
func (h *handler) notebookOpenRedirect(c *gin.Context) {
	c.Redirect(http.StatusFound, notebookOpenURL(c.Param("team"), c.Param("name")))
}

// notebookOpen proxies the signed-in owner (or, once shared, a member of
// the team) to a ready address of the notebook's Service, HTTP and
// WebSocket alike, streaming; everyone else gets the refusal page, and a
// notebook that cannot be reached now a page saying why.
func (h *handler) notebookOpen(c *gin.Context) {
	u, _ := auth.CurrentUser(c)
	ctx := c.Request.Context()
	team, name := c.Param("team"), c.Param("name")
	member := slices.Contains(teamNames(u), team)
	if !member {
		h.fail(c, fmt.Errorf("open notebook %s/%s as %s: %w", team, name, u.Username, proxy.ErrRefused))
		return
	}
	rec, err := h.Jobs.Record(ctx, team, name)
	if err != nil {
		h.fail(c, err)
		return
	}
	if err := h.Proxy.Access.MayOpenNotebook(ctx, team, name, rec.Owner, u.Username, member); err != nil {
		h.fail(c, err)
		return
	}
	if catalog.Kind(rec.Kind) != catalog.KindNotebook {
		h.fail(c, fmt.Errorf("open %s/%s: %w", team, name, errNotANotebook))
		return
	}
	r := c.Request
	origin := r.Header.Get("Origin")
	if isUpgrade(r) && !sameOrigin(h.PublicURL, origin) ||
		origin != "" && !safeMethod(r.Method) && !sameOrigin(h.PublicURL, origin) {
		h.fail(c, fmt.Errorf("open notebook %s/%s: origin %q: %w", team, name, origin, errCrossOrigin))
		return
	}
	st, err := h.jobStatusOf(rec)
	if err != nil {
		h.fail(c, err)
		return
	}
	target, err := proxy.Target(h.Proxy.Endpoints, proxy.Job{Kind: catalog.Kind(rec.Kind), Namespace: rec.Namespace, Service: rec.Name, Phase: st.Phase})
	var unavailable *proxy.Unavailable
	if errors.As(err, &unavailable) {
		props := views.JobUnavailableProps{Team: team, Name: name, Words: unavailable.Words, Reason: string(unavailable.Reason), JobURL: jobURL(team, name)}
		if unavailable.Resumable {
			props.ResumeURL = jobURL(team, name) + "/resume"
		}
		h.render(c, http.StatusServiceUnavailable, views.JobUnavailablePage(h.nav(c, "jobs"), props))
		return
	}
	if err != nil {
		h.fail(c, err)
		return
	}
	// The notebook's own pages set their own policy; the portal's (no
	// inline script, no frames) would break them.
	c.Writer.Header().Del("Content-Security-Policy")
	c.Writer.Header().Del("X-Frame-Options")
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.SetXForwarded()
			// The notebook sees the portal's host, as behind any ingress:
			// its own origin checks compare Origin with Host.
			pr.Out.Host = pr.In.Host
			stripPortalCredentials(pr.Out.Header)
		},
		Transport:      h.Proxy.Transport,
		FlushInterval:  -1,
		ModifyResponse: dropPortalSetCookies,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			h.Log.WarnContext(r.Context(), "notebook did not answer", "team", team, "name", name, "err", err)
			if c.Writer.Written() {
				return
			}
			h.render(c, http.StatusBadGateway, views.JobUnavailablePage(h.nav(c, "jobs"), views.JobUnavailableProps{
				Team: team, Name: name, JobURL: jobURL(team, name), Reason: "no-answer",
				Words: "The notebook's server did not answer: it may be restarting. Try again in a moment."}))
		},
	}
	h.passThrough(c, rp)
}

func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}
