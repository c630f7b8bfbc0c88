package web

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPortalCredentialsNeverGoUpstream(t *testing.T) {
	h := http.Header{}
	h.Set("Authorization", "Bearer gty_secret")
	h.Set("X-CSRF-Token", "token")
	h.Add("Cookie", "gantry_session=s; _xsrf=jupyter; gantry_csrf=c")
	h.Add("Cookie", "username-host=u")
	stripPortalCredentials(h)
	assert.Empty(t, h.Get("Authorization"))
	assert.Empty(t, h.Get("X-CSRF-Token"))
	assert.Equal(t, []string{"_xsrf=jupyter; username-host=u"}, h.Values("Cookie"), "the notebook's own cookies stay")
}

func TestSameOriginAndProxyPaths(t *testing.T) {
	public := &url.URL{Scheme: "https", Host: "gantry.example.com"}
	assert.True(t, sameOrigin(public, "https://gantry.example.com"))
	assert.False(t, sameOrigin(public, "http://gantry.example.com"), "scheme counts")
	assert.False(t, sameOrigin(public, "https://evil.example.com"))
	assert.False(t, sameOrigin(public, ""))
	assert.True(t, isProxyPath("/teams/vision/jobs/nb-1/open/api/kernels"))
	assert.True(t, isProxyPath("/endpoints/vision/llm/v1/completions"))
	assert.False(t, isProxyPath("/teams/vision/jobs/nb-1/stop"))
	assert.False(t, isProxyPath("/teams/vision/jobs/open"))
}

// The usage in a streamed answer's last event and in a JSON answer is
// counted once the answer ends; the bytes pass through unchanged.
func TestMeteredBodyReadsUsage(t *testing.T) {
	cases := map[string]struct {
		ctype, body        string
		prompt, completion int64
	}{
		"stream": {"text/event-stream", "data: {\"choices\":[{\"text\":\"a\"}]}\n\ndata: {\"choices\":[{\"text\":\"b\"}],\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":2}}\n\ndata: [DONE]\n\n", 4, 2},
		"json":   {"application/json", `{"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":9}}`, 7, 9},
		"none":   {"application/json", `{"data":[]}`, 0, 0},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got []int64
			resp := &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {tc.ctype}}, Body: io.NopCloser(strings.NewReader(tc.body))}
			m := newMeteredBody(resp, func(status int, p, c int64) { got = append(got, int64(status), p, c) })
			out, err := io.ReadAll(&oneByteReader{m})
			require.NoError(t, err)
			require.NoError(t, m.Close())
			assert.Equal(t, tc.body, string(out))
			assert.Equal(t, []int64{200, tc.prompt, tc.completion}, got, "recorded once")
		})
	}
}

// oneByteReader splits reads so events cross read boundaries.
type oneByteReader struct{ r io.Reader }

func (o *oneByteReader) Read(p []byte) (int, error) {
	if len(p) > 3 {
		p = p[:3]
	}
	return o.r.Read(p)
}

// A notebook runs its user's code in the portal's origin: an answer that
// tries to set the portal's own cookies loses those lines, its own stay.
func TestNotebookCannotSetThePortalsCookies(t *testing.T) {
	resp := &http.Response{Header: http.Header{}}
	resp.Header.Add("Set-Cookie", "gantry_session=planted; Path=/; HttpOnly")
	resp.Header.Add("Set-Cookie", "gantry_csrf=planted; Path=/")
	resp.Header.Add("Set-Cookie", "_xsrf=jupyter; Path=/teams/vision/jobs/nb-1/open/")
	require.NoError(t, dropPortalSetCookies(resp))
	assert.Equal(t, []string{"_xsrf=jupyter; Path=/teams/vision/jobs/nb-1/open/"}, resp.Header.Values("Set-Cookie"))
}
