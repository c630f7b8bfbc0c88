package web

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/auth"
)

// proxiedMethods are the methods the proxies pass on (CONNECT and TRACE
// are not).
var proxiedMethods = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut,
	http.MethodPatch, http.MethodDelete, http.MethodOptions}

// proxyRoutes are the ways into notebooks and endpoints through the portal,
// notebook sharing and endpoint keys (pages and their /api/v1 twins).
func (h *handler) proxyRoutes(r *gin.Engine, signedIn, api *gin.RouterGroup) {
	if h.Proxy.Transport == nil {
		h.Proxy.Transport = newProxyTransport()
	}
	// A notebook's own requests carry its own XSRF token, not the
	// portal's: the CSRF check runs only on safe methods (so the pages the
	// portal renders here get a token), and changing requests from another
	// origin are refused by the handler instead.
	csrf := h.csrfProtect()
	open := []gin.HandlerFunc{auth.LoadSession(h.Sessions, h.fail), markSessionLoaded,
		func(c *gin.Context) {
			if safeMethod(c.Request.Method) {
				csrf(c)
				return
			}
			c.Next()
		},
		h.Auth.SessionUser(h.fail), h.requirePageUser}
	r.GET("/teams/:team/jobs/:name/open", append(open, h.notebookOpenRedirect)...)
	for _, m := range proxiedMethods {
		r.Handle(m, "/teams/:team/jobs/:name/open/*path", append(open, h.notebookOpen)...)
	}

	signedIn.POST("/teams/:team/jobs/:name/share", h.jobShare)
	signedIn.POST("/teams/:team/jobs/:name/keys", h.endpointKeysCreate)
	signedIn.POST("/teams/:team/jobs/:name/keys/:id/revoke", h.endpointKeysRevoke)

	api.POST("/teams/:team/jobs/:name/share", h.apiJobsShare)
	api.GET("/teams/:team/jobs/:name/keys", h.apiEndpointKeysList)
	api.POST("/teams/:team/jobs/:name/keys", h.apiEndpointKeysCreate)
	api.POST("/teams/:team/jobs/:name/keys/:id/revoke", h.apiEndpointKeysRevoke)

	// Endpoint callers are programs with a key: no session, no CSRF.
	for _, m := range proxiedMethods {
		r.Handle(m, "/endpoints/:team/:name", h.endpointCall)
		r.Handle(m, "/endpoints/:team/:name/*path", h.endpointCall)
	}
}
