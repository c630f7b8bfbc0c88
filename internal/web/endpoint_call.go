package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httputil"
	"strings"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/catalog"
	"github.com/gantry-dev/gantry/internal/kube"
	"github.com/gantry-dev/gantry/internal/proxy"
	"github.com/gantry-dev/gantry/internal/store"
)

// Stable codes of the endpoint proxy's JSON errors.
const (
	codeInvalidEndpointKey  = "invalid_endpoint_key"
	codeEndpointUnavailable = "endpoint_unavailable"
)

// endpointURL is an inference endpoint's base URL through the portal.
func endpointURL(team, name string) string { return "/endpoints/" + team + "/" + name + "/" }

// endpointCall proxies a call to the team's inference endpoint, with a key
// of that endpoint as Authorization: Bearer, to a ready address of its
// Service. The path below /endpoints/{team}/{name} passes through
// unchanged; streamed answers stay streamed. Every call is counted.
func (h *handler) endpointCall(c *gin.Context) {
	start := time.Now()
	ctx := c.Request.Context()
	team, name := c.Param("team"), c.Param("name")
	if _, err := h.Proxy.Access.Authenticate(ctx, team, name, c.GetHeader("Authorization")); err != nil {
		if !errors.Is(err, proxy.ErrRefused) {
			h.endpointFail(c, err)
			return
		}
		h.Log.InfoContext(ctx, "endpoint call refused", "team", team, "name", name, "err", err)
		c.Header("WWW-Authenticate", `Bearer realm="gantry-endpoint"`)
		c.AbortWithStatusJSON(http.StatusUnauthorized, apiErrorBody{Error: "Unauthorized", Code: codeInvalidEndpointKey, RequestID: requestIDOf(c),
			Message: "Send a key of this endpoint as \"Authorization: Bearer gek_…\". The key may be missing, unknown, revoked, expired or another endpoint's; the endpoint's page in the portal makes keys."})
		return
	}
	record := func(status int, prompt, completion int64) {
		h.Proxy.Usage.Record(proxy.Call{Team: team, Name: name, Status: status, Latency: time.Since(start), PromptTokens: prompt, CompletionTokens: completion})
	}
	st, err := h.Jobs.Status(team, name, catalog.KindInference)
	if err != nil {
		h.endpointFail(c, err)
		return
	}
	target, err := proxy.Target(h.Proxy.Endpoints, proxy.Job{Kind: catalog.KindInference, Namespace: st.Namespace, Service: name, Phase: st.Phase})
	var unavailable *proxy.Unavailable
	if errors.As(err, &unavailable) {
		record(http.StatusServiceUnavailable, 0, 0)
		c.AbortWithStatusJSON(http.StatusServiceUnavailable, apiErrorBody{Error: "Endpoint unavailable", Code: codeEndpointUnavailable,
			Message: unavailable.Words, RequestID: requestIDOf(c)})
		return
	}
	if err != nil {
		h.endpointFail(c, err)
		return
	}
	rest := c.Param("path")
	if rest == "" {
		rest = "/"
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.URL.Path, pr.Out.URL.RawPath = rest, ""
			pr.SetXForwarded()
			stripPortalCredentials(pr.Out.Header)
		},
		Transport:     h.Proxy.Transport,
		FlushInterval: -1,
		ModifyResponse: func(resp *http.Response) error {
			_ = dropPortalSetCookies(resp)
			if resp.StatusCode == http.StatusSwitchingProtocols {
				record(resp.StatusCode, 0, 0)
				return nil
			}
			resp.Body = newMeteredBody(resp, record)
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			h.Log.WarnContext(r.Context(), "endpoint did not answer", "team", team, "name", name, "err", err)
			record(http.StatusBadGateway, 0, 0)
			if c.Writer.Written() {
				return
			}
			c.AbortWithStatusJSON(http.StatusBadGateway, apiErrorBody{Error: "Endpoint did not answer", Code: "bad_gateway", RequestID: requestIDOf(c),
				Message: "The endpoint's server did not answer: it may be restarting or overloaded. Try again in a moment."})
		},
	}
	h.passThrough(c, rp)
}

// endpointFail answers errors other than refusals in the API's error shape.
func (h *handler) endpointFail(c *gin.Context, err error) {
	p := describe(err)
	if errors.Is(err, kube.ErrNotFound) || errors.Is(err, store.ErrNotFound) {
		p.Message = "There is no inference endpoint by this name in this team."
	}
	h.Log.Log(c.Request.Context(), h.levelFor(p.Status), "endpoint call failed", "status", p.Status, "path", c.Request.URL.Path, "err", err)
	c.AbortWithStatusJSON(p.Status, apiErrorBody{Error: p.Title, Code: apiCode(err, p.Status), Message: p.Message, RequestID: requestIDOf(c)})
}

// maxUsageJSON is how much of a non-streamed answer is kept to read its
// usage object; larger answers are passed on without it.
const maxUsageJSON = 1 << 20

// meteredBody passes an endpoint's answer through untouched while reading
// the OpenAI-style "usage" in it (the last SSE event carrying one, or the
// JSON body's), and records the call once the answer ends.
type meteredBody struct {
	io.ReadCloser
	sse      bool
	buf      bytes.Buffer // JSON answer, or the SSE line being read
	overflow bool
	prompt   int64
	complete int64
	status   int
	once     sync.Once
	record   func(status int, prompt, completion int64)
}

func newMeteredBody(resp *http.Response, record func(int, int64, int64)) *meteredBody {
	return &meteredBody{ReadCloser: resp.Body, status: resp.StatusCode, record: record,
		sse: strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")}
}

type usageEnvelope struct {
	Usage *struct {
		PromptTokens     int64 `json:"prompt_tokens"`
		CompletionTokens int64 `json:"completion_tokens"`
	} `json:"usage"`
}

func (m *meteredBody) Read(p []byte) (int, error) {
	n, err := m.ReadCloser.Read(p)
	m.observe(p[:n])
	if err == io.EOF {
		m.finish()
	}
	return n, err
}

func (m *meteredBody) Close() error {
	m.finish()
	return m.ReadCloser.Close()
}

func (m *meteredBody) observe(b []byte) {
	if !m.sse {
		if !m.overflow && m.buf.Len()+len(b) <= maxUsageJSON {
			m.buf.Write(b)
		} else {
			m.overflow = true
		}
		return
	}
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			if m.buf.Len()+len(b) <= maxUsageJSON {
				m.buf.Write(b)
			}
			return
		}
		m.buf.Write(b[:i])
		m.sseLine(m.buf.Bytes())
		m.buf.Reset()
		b = b[i+1:]
	}
}

func (m *meteredBody) sseLine(line []byte) {
	data, ok := bytes.CutPrefix(bytes.TrimSpace(line), []byte("data:"))
	if !ok || !bytes.Contains(data, []byte(`"usage"`)) {
		return
	}
	m.takeUsage(bytes.TrimSpace(data))
}

func (m *meteredBody) takeUsage(b []byte) {
	var env usageEnvelope
	if json.Unmarshal(b, &env) == nil && env.Usage != nil {
		m.prompt, m.complete = env.Usage.PromptTokens, env.Usage.CompletionTokens
	}
}

func (m *meteredBody) finish() {
	m.once.Do(func() {
		if !m.sse && !m.overflow {
			m.takeUsage(m.buf.Bytes())
		}
		m.record(m.status, m.prompt, m.complete)
	})
}
