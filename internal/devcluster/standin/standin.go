// Package standin is the local stack's stand-in for what notebook and
// inference pods would serve: one small HTTP server, started inside the
// stack's network namespace where every simulated pod IP is local, so the
// portal's proxies reach a real server at a pod's IP.
//
// It answers on any path prefix (a notebook's base URL, or an endpoint's
// path below the proxy's prefix):
//
//	…/health            200 "ok" (readiness probes)
//	…/ws                WebSocket echo
//	…/headers           the request's headers as JSON (what the proxy forwarded)
//	…/v1/models         OpenAI-style model list
//	…/v1/completions    OpenAI-style completion; "stream": true answers in SSE chunks
//	anything else       an HTML page showing its base path, whose script round-trips a WebSocket message
package standin

import (
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"strings"
	"time"

	"github.com/gorilla/websocket"
)

// Model is the one model the stand-in serves.
const Model = "gantry-stand-in"

// ChunkInterval is the pause between streamed completion chunks, long
// enough that a client sees them arrive one by one.
const ChunkInterval = 40 * time.Millisecond

// Handler is the stand-in's HTTP handler.
func Handler() http.Handler {
	up := websocket.Upgrader{
		// The stand-in is reached only through the portal's proxy, which
		// checks the Origin itself; here every origin is fine.
		CheckOrigin: func(*http.Request) bool { return true },
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		switch {
		case strings.HasSuffix(p, "/health"):
			_, _ = w.Write([]byte("ok\n"))
		case strings.HasSuffix(p, "/ws"):
			echo(w, r, up)
		case strings.HasSuffix(p, "/headers"):
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(r.Header)
		case strings.HasSuffix(p, "/v1/models"):
			models(w)
		case strings.HasSuffix(p, "/v1/completions"):
			completions(w, r)
		default:
			page(w, r)
		}
	})
}

func echo(w http.ResponseWriter, r *http.Request, up websocket.Upgrader) {
	conn, err := up.Upgrade(w, r, nil)
	if err != nil {
		return // Upgrade already answered.
	}
	defer conn.Close()
	for {
		kind, msg, err := conn.ReadMessage()
		if err != nil {
			return
		}
		if err := conn.WriteMessage(kind, append([]byte("echo: "), msg...)); err != nil {
			return
		}
	}
}

func models(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"object": "list",
		"data":   []map[string]any{{"id": Model, "object": "model", "created": 1700000000, "owned_by": "gantry"}},
	})
}

// completionWords is what every completion says, one word per chunk.
var completionWords = []string{"Hello", " from", " the", " Gantry", " stand-in", "."}

type completionRequest struct {
	Model  string `json:"model"`
	Prompt any    `json:"prompt"`
	Stream bool   `json:"stream"`
}

// Usage is an OpenAI-style usage object.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

func completions(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "use POST", http.StatusMethodNotAllowed)
		return
	}
	var req completionRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&req); err != nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"message": "body is not JSON: " + err.Error(), "type": "invalid_request_error"}})
		return
	}
	prompt := fmt.Sprint(req.Prompt)
	usage := Usage{PromptTokens: len(strings.Fields(prompt)), CompletionTokens: len(completionWords)}
	usage.TotalTokens = usage.PromptTokens + usage.CompletionTokens
	id := fmt.Sprintf("cmpl-%d", time.Now().UnixNano())
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": id, "object": "text_completion", "model": Model,
			"choices": []map[string]any{{"index": 0, "text": strings.Join(completionWords, ""), "finish_reason": "stop"}},
			"usage":   usage,
		})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	flusher, _ := w.(http.Flusher)
	for i, word := range completionWords {
		chunk := map[string]any{"id": id, "object": "text_completion", "model": Model,
			"choices": []map[string]any{{"index": 0, "text": word, "finish_reason": nil}}}
		if i == len(completionWords)-1 {
			chunk["choices"] = []map[string]any{{"index": 0, "text": word, "finish_reason": "stop"}}
			chunk["usage"] = usage
		}
		b, _ := json.Marshal(chunk)
		if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
			return
		}
		if flusher != nil {
			flusher.Flush()
		}
		select {
		case <-r.Context().Done():
			return
		case <-time.After(ChunkInterval):
		}
	}
	_, _ = fmt.Fprint(w, "data: [DONE]\n\n")
}

var pageTemplate = template.Must(template.New("page").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Gantry stand-in</title></head>
<body>
<h1>Gantry stand-in server</h1>
<p>This page stands in for a notebook or model server on the local stack.</p>
<p>Base path: <code data-testid="base-path">{{.Base}}</code></p>
<p>WebSocket: <span id="echo" data-testid="echo">not connected</span></p>
<script>
(function () {
  var u = new URL("ws", location.href);
  u.protocol = location.protocol === "https:" ? "wss:" : "ws:";
  var ws = new WebSocket(u.href);
  var out = document.getElementById("echo");
  ws.onopen = function () { out.textContent = "connected"; ws.send("hello through the proxy"); };
  ws.onmessage = function (e) { out.textContent = e.data; };
  ws.onerror = function () { out.textContent = "WebSocket failed"; };
})();
</script>
</body></html>
`))

func page(w http.ResponseWriter, r *http.Request) {
	base := r.URL.Path
	if i := strings.LastIndexByte(base, '/'); i >= 0 {
		base = base[:i+1]
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_ = pageTemplate.Execute(w, struct{ Base string }{base})
}
