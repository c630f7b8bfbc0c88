package web

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gantry-dev/gantry/internal/devcluster/standin"
)

// pageTimeout stands for the server's read and write timeouts (a minute
// and two in cmd/gantry), short so the test outlasts them.
const pageTimeout = 300 * time.Millisecond

// passThroughPortal serves /up/… through the portal's middleware and
// passThrough to upstream, on a server with page timeouts.
func passThroughPortal(t *testing.T, upstream http.Handler) string {
	t.Helper()
	up := httptest.NewServer(upstream)
	t.Cleanup(up.Close)
	return proxyPortal(t, up.URL)
}

// proxyPortal serves /up/… through the portal's middleware and
// passThrough to the server at target, on a server with page timeouts.
func proxyPortal(t *testing.T, target string) string {
	t.Helper()
	u, err := url.Parse(target)
	require.NoError(t, err)
	return pageTimeoutsPortal(t, func(h *handler, c *gin.Context) {
		h.passThrough(c, &httputil.ReverseProxy{
			Rewrite:       func(pr *httputil.ProxyRequest) { pr.SetURL(u) },
			Transport:     newProxyTransport(),
			FlushInterval: -1,
			ErrorLog:      log.New(io.Discard, "", 0),
		})
	})
}

// pageTimeoutsPortal serves /up/… with serve behind the portal's
// middleware, on a server with page timeouts.
func pageTimeoutsPortal(t *testing.T, serve func(*handler, *gin.Context)) string {
	t.Helper()
	h := &handler{Deps: Deps{Log: slog.New(slog.DiscardHandler)}}
	r := gin.New()
	r.Use(h.serverTiming)
	r.Any("/up/*path", func(c *gin.Context) { serve(h, c) })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: r, ReadHeaderTimeout: pageTimeout, ReadTimeout: pageTimeout, WriteTimeout: pageTimeout}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String()
}

// An endpoint or notebook server may answer before it has read the whole
// request, and keep answering: the answer streams on while the upload
// still arrives, both past the portal's page timeouts, and nothing is cut.
// (Go's server would otherwise read and close the request body as the
// answer starts, under the transport still sending it, which closes the
// upstream connection: a streamed completion cut after its first chunk.)
func TestAStreamedAnswerFlowsWhileTheUploadStillArrives(t *testing.T) {
	portal := passThroughPortal(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		_ = rc.EnableFullDuplex()
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = fmt.Fprint(w, "data: first\n\n")
		_ = rc.Flush()
		n, err := io.Copy(io.Discard, r.Body)
		for i := range 3 {
			time.Sleep(pageTimeout / 2)
			_, _ = fmt.Fprintf(w, "data: tick %d\n\n", i)
			_ = rc.Flush()
		}
		_, _ = fmt.Fprintf(w, "data: read %d bytes, err %v\n\n", n, err)
	}))

	half := strings.Repeat("x", 1000)
	body, upload := io.Pipe()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, portal+"/up/v1/completions", body)
	require.NoError(t, err)
	req.ContentLength = int64(2 * len(half))
	firstArrived := make(chan struct{})
	go func() {
		_, _ = io.WriteString(upload, half)
		select {
		case <-firstArrived:
		case <-ctx.Done():
		}
		time.Sleep(pageTimeout + pageTimeout/2) // the upload outlasts the read timeout
		_, _ = io.WriteString(upload, half)
		_ = upload.Close()
	}()
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err, "the answer starts before the upload ends")
	defer resp.Body.Close()
	var events []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			events = append(events, data)
			if len(events) == 1 {
				close(firstArrived)
			}
		}
	}
	require.NoError(t, sc.Err(), "the answer ends cleanly; events so far: %q", events)
	assert.Equal(t, []string{"first", "tick 0", "tick 1", "tick 2", "read 2000 bytes, err <nil>"}, events,
		"every event arrives, and the server got the whole upload")
}

// A WebSocket through the portal (a notebook's kernel channel; here the
// stand-in's echo) lasts past the server's read and write timeouts.
func TestAWebSocketOutlastsThePageTimeouts(t *testing.T) {
	portal := passThroughPortal(t, standin.Handler())
	conn, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(portal, "http")+"/up/api/kernels/k/ws", nil)
	require.NoError(t, err)
	defer conn.Close()
	for i := range 3 {
		if i > 0 {
			time.Sleep(pageTimeout + pageTimeout/2)
		}
		require.NoError(t, conn.WriteMessage(websocket.TextMessage, []byte(fmt.Sprint("message ", i))))
		require.NoError(t, conn.SetReadDeadline(time.Now().Add(20*time.Second)))
		_, msg, err := conn.ReadMessage()
		require.NoError(t, err, "message %d, %s after the connection opened", i, time.Duration(i)*(pageTimeout+pageTimeout/2))
		assert.Equal(t, fmt.Sprint("echo: message ", i), string(msg))
	}
}

// slowLines yields n lines, one every interval: a followed log.
type slowLines struct {
	n, sent  int
	interval time.Duration
}

func (s *slowLines) Read(p []byte) (int, error) {
	if s.sent == s.n {
		return 0, io.EOF
	}
	time.Sleep(s.interval)
	s.sent++
	return copy(p, fmt.Sprintf("line %d\n", s.sent)), nil
}

// A followed log streams for as long as the pod writes, past the server's
// write timeout.
func TestAFollowedLogOutlastsTheWriteTimeout(t *testing.T) {
	portal := pageTimeoutsPortal(t, func(h *handler, c *gin.Context) {
		h.liftWriteDeadline(c)
		c.Header("Content-Type", "text/plain; charset=utf-8")
		c.Status(http.StatusOK)
		_ = copyFlushing(c.Writer, &slowLines{n: 4, interval: pageTimeout / 2})
	})
	resp, err := http.Get(portal + "/up/logs?follow=true")
	require.NoError(t, err)
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	require.NoError(t, err, "the stream is not cut; so far: %q", got)
	assert.Equal(t, "line 1\nline 2\nline 3\nline 4\n", string(got))
}

// An upload the upstream does not take, because it is not there (a
// notebook restarting) or refuses it before reading it, gets its sender
// the answer, and the client's next request works: with full duplex the
// rest of the upload stays unread, so the portal closes that connection
// and says so ("Connection: close") instead of leaving the client to
// reuse it and see its next request fail.
func TestAnUploadTheUpstreamDoesNotTakeGetsAnAnswer(t *testing.T) {
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "too large", http.StatusRequestEntityTooLarge)
	}))
	t.Cleanup(refusing.Close)
	for _, tc := range []struct {
		upstream string
		status   int
	}{{gone.URL, http.StatusBadGateway}, {refusing.URL, http.StatusRequestEntityTooLarge}} {
		portal := proxyPortal(t, tc.upstream)
		client := &http.Client{Timeout: 20 * time.Second}
		for i := range 5 {
			resp, err := client.Post(portal+"/up/api/contents/big.ipynb", "application/json", strings.NewReader(strings.Repeat("x", 1<<20)))
			require.NoError(t, err, "upload %d to %d", i, tc.status)
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			assert.Equal(t, tc.status, resp.StatusCode, "upload %d", i)
		}
	}
}
