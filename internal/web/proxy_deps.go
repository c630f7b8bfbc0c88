package web

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/auth"
	"github.com/gantry-dev/gantry/internal/proxy"
)

// ProxyDeps serve opening notebooks (/teams/{team}/jobs/{name}/open/) and
// calling inference endpoints (/endpoints/{team}/{name}/) through the
// portal, endpoint keys and notebook sharing.
type ProxyDeps struct {
	Access    *proxy.Access
	Usage     *proxy.Usage
	Endpoints proxy.Endpoints
	// Transport reaches the pods; nil means newProxyTransport().
	Transport http.RoundTripper
}

// newProxyTransport is the transport to notebook and endpoint pods: no
// proxy from the environment (pods are reached directly), kept-alive
// connections, no overall timeout (streams and WebSockets last).
func newProxyTransport() *http.Transport {
	return &http.Transport{
		DialContext:           (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:          200,
		MaxIdleConnsPerHost:   32,
		IdleConnTimeout:       90 * time.Second,
		ResponseHeaderTimeout: 5 * time.Minute,
		// Answers pass through as they are: no transparent gzip.
		DisableCompression: true,
	}
}

// portalHeaders are request headers meant for the portal alone: they never
// reach a notebook or endpoint.
var portalHeaders = []string{"Authorization", csrfHeaderName, "X-Csrf-Token", "Proxy-Authorization"}

// stripPortalCredentials removes the portal's cookies (all named gantry_…),
// its Authorization and CSRF headers from a request about to go upstream;
// the notebook's own cookies stay.
func stripPortalCredentials(h http.Header) {
	for _, k := range portalHeaders {
		h.Del(k)
	}
	cookies := h.Values("Cookie")
	h.Del("Cookie")
	var kept []string
	for _, line := range cookies {
		for _, part := range strings.Split(line, ";") {
			name, _, _ := strings.Cut(strings.TrimSpace(part), "=")
			if name == "" || isPortalCookie(name) {
				continue
			}
			kept = append(kept, strings.TrimSpace(part))
		}
	}
	if len(kept) > 0 {
		h.Set("Cookie", strings.Join(kept, "; "))
	}
}

// dropPortalSetCookies removes, from an answer coming back through a proxy,
// every Set-Cookie that names one of the portal's cookies: a notebook runs
// its user's code in the portal's origin, and must not be able to plant or
// overwrite a viewer's session or CSRF cookie (session fixation through a
// shared notebook). The notebook's own cookies pass.
func dropPortalSetCookies(resp *http.Response) error {
	lines := resp.Header.Values("Set-Cookie")
	if len(lines) == 0 {
		return nil
	}
	resp.Header.Del("Set-Cookie")
	for _, line := range lines {
		name, _, _ := strings.Cut(strings.TrimSpace(line), "=")
		if isPortalCookie(strings.TrimSpace(name)) {
			continue
		}
		resp.Header.Add("Set-Cookie", line)
	}
	return nil
}

// isPortalCookie reports whether a cookie name is one of the portal's own.
func isPortalCookie(name string) bool {
	return strings.HasPrefix(name, "gantry_") || name == auth.SessionCookieName
}

// sameOrigin reports whether origin (an Origin header) is the portal's own.
func sameOrigin(public *url.URL, origin string) bool {
	o, err := url.Parse(origin)
	if err != nil {
		return false
	}
	return strings.EqualFold(o.Scheme, public.Scheme) && strings.EqualFold(o.Host, public.Host)
}

// isUpgrade reports a WebSocket (or other) upgrade request.
func isUpgrade(r *http.Request) bool {
	return r.Header.Get("Upgrade") != "" && strings.Contains(strings.ToLower(r.Header.Get("Connection")), "upgrade")
}

// passThrough serves the request through rp to a notebook or endpoint:
// the answer may stream (or become a WebSocket) for as long as it lasts,
// beyond the server's read and write timeouts (meant for pages), and the
// request body keeps flowing upstream while the answer already comes back.
//
// Without full duplex, Go's server reads what is left of the request body
// and closes it as soon as the answer's first bytes go out, while the
// transport may still be reading that body to send it: the transport then
// fails to write the request and closes the upstream connection, cutting a
// streamed completion after its first chunk, or an upload whose server
// answers before it has read everything.
func (h *handler) passThrough(c *gin.Context, rp *httputil.ReverseProxy) {
	rc := http.NewResponseController(c.Writer)
	if err := errors.Join(rc.SetWriteDeadline(time.Time{}), rc.SetReadDeadline(time.Time{}), rc.EnableFullDuplex()); err != nil {
		h.Log.ErrorContext(c.Request.Context(), "proxied request keeps the page timeouts: it may be cut", "path", c.Request.URL.Path, "err", err)
	}
	if r := c.Request; r.Body != nil && r.Body != http.NoBody && r.ContentLength != 0 {
		closeUnlessSent(rp, r)
	}
	rp.ServeHTTP(c.Writer, c.Request)
}

// closeUnlessSent has an answer that starts before the request's body has
// all been sent upstream (a server that refuses an upload early, one that
// is not there, a stream answering while the upload goes on) close the
// client's connection after it, saying so in "Connection: close": with full
// duplex the rest of the upload stays unread, so the connection cannot
// carry the client's next request, and a client that reused it would see
// that request fail.
func closeUnlessSent(rp *httputil.ReverseProxy, r *http.Request) {
	up := &uploadBody{ReadCloser: r.Body, want: r.ContentLength}
	r.Body = up
	modify, fail := rp.ModifyResponse, rp.ErrorHandler
	rp.ModifyResponse = func(resp *http.Response) error {
		if resp.StatusCode != http.StatusSwitchingProtocols && !up.sent() {
			resp.Header.Set("Connection", "close")
		}
		if modify == nil {
			return nil
		}
		return modify(resp)
	}
	rp.ErrorHandler = func(w http.ResponseWriter, r *http.Request, err error) {
		if !up.sent() {
			w.Header().Set("Connection", "close")
		}
		if fail == nil {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		fail(w, r, err)
	}
}

// uploadBody is a request body on its way upstream, telling whether all of
// it has been read.
type uploadBody struct {
	io.ReadCloser
	want int64 // the Content-Length, -1 when unknown (chunked)
	read atomic.Int64
	eof  atomic.Bool
}

func (u *uploadBody) Read(p []byte) (int, error) {
	n, err := u.ReadCloser.Read(p)
	u.read.Add(int64(n))
	if err == io.EOF {
		u.eof.Store(true)
	}
	return n, err
}

func (u *uploadBody) sent() bool {
	return u.eof.Load() || u.want >= 0 && u.read.Load() >= u.want
}

// isProxyPath reports the routes whose bodies pass through to a notebook
// or endpoint untouched: the portal's body limit and form parsing skip them.
func isProxyPath(path string) bool {
	if strings.HasPrefix(path, "/endpoints/") {
		return true
	}
	// /teams/{team}/jobs/{name}/open/…
	parts := strings.SplitN(strings.TrimPrefix(path, "/"), "/", 6)
	return len(parts) >= 5 && parts[0] == "teams" && parts[2] == "jobs" && parts[4] == "open"
}
