package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/gin-gonic/gin"
)

// Media types the logs API answers in.
const (
	mimeText   = "text/plain"
	mimeJSON   = "application/json"
	mimeNDJSON = "application/x-ndjson"
)

// apiJobLog is the head of the JSON answer; Lines follow, streamed.
type apiJobLog struct {
	Team      string `json:"team"`
	Job       string `json:"job"`
	Pod       string `json:"pod"`
	Container string `json:"container"`
	Previous  bool   `json:"previous"`
}

// apiJobLogs streams a container's log, read as the caller (RBAC decides):
// plain text by default; with Accept: application/json one object
// {team, job, pod, container, previous, lines, cutLines}; when following,
// with Accept: application/json or application/x-ndjson, one {"line": …}
// object per line as it is written. Nothing holds the whole log.
func (h *handler) apiJobLogs(c *gin.Context) {
	q, problems := parseLogQuery(c.Request.URL.Query())
	if len(problems) > 0 {
		msgs := make([]string, 0, len(problems))
		for _, k := range slices.Sorted(maps.Keys(problems)) {
			msgs = append(msgs, problems[k])
		}
		c.AbortWithStatusJSON(http.StatusUnprocessableEntity, gin.H{"error": "Check your input", "code": apiCode(nil, http.StatusUnprocessableEntity),
			"message": strings.Join(msgs, " "), "fields": problems, "request_id": requestIDOf(c)})
		return
	}
	u, rec, targets, err := h.jobLogTargets(c)
	if err != nil {
		h.fail(c, err)
		return
	}
	pod, ctr, err := logTarget(targets, q)
	if err != nil {
		h.fail(c, err)
		return
	}
	ctx := c.Request.Context()
	if q.Follow {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, followLimit)
		defer cancel()
	}
	log, err := h.openLog(ctx, u, rec, pod.Pod, ctr.Name, q)
	if err != nil {
		h.fail(c, err)
		return
	}
	defer log.Close()
	h.liftWriteDeadline(c)
	c.Header("Cache-Control", "no-store")
	format := c.NegotiateFormat(mimeText, mimeJSON, mimeNDJSON)
	switch {
	case format == mimeNDJSON || (format == mimeJSON && q.Follow):
		c.Header("Content-Type", mimeNDJSON)
		c.Status(http.StatusOK)
		err = writeLogNDJSON(c.Writer, log)
	case format == mimeJSON:
		c.Header("Content-Type", mimeJSON+"; charset=utf-8")
		c.Status(http.StatusOK)
		err = writeLogJSON(c.Writer, log, apiJobLog{Team: rec.Team, Job: rec.Name, Pod: pod.Pod, Container: ctr.Name, Previous: q.Previous})
	default:
		c.Header("Content-Type", mimeText+"; charset=utf-8")
		c.Status(http.StatusOK)
		err = copyFlushing(c.Writer, log)
	}
	if err != nil && ctx.Err() == nil {
		h.Log.WarnContext(ctx, "log stream ended early", "path", c.Request.URL.Path, "request_id", requestIDOf(c), "err", err)
	}
}

// writeLogJSON writes the head's fields, then the lines one by one, then
// how many were cut to maxLogLineBytes.
func writeLogJSON(w io.Writer, r io.Reader, head apiJobLog) error {
	b, err := json.Marshal(head)
	if err != nil {
		return fmt.Errorf("encode log head: %w", err)
	}
	if _, err := fmt.Fprintf(w, `%s,"lines":[`, b[:len(b)-1]); err != nil {
		return err
	}
	lines, cutLines := newLogLines(r, maxLogLineBytes), 0
	for i := 0; ; i++ {
		line, cut, err := lines.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		if cut {
			cutLines++
		}
		sep := ","
		if i == 0 {
			sep = ""
		}
		s, _ := json.Marshal(line)
		if _, err := fmt.Fprintf(w, "%s%s", sep, s); err != nil {
			return err
		}
	}
	_, err = fmt.Fprintf(w, `],"cutLines":%d}`+"\n", cutLines)
	return err
}

// writeLogNDJSON writes one {"line": …} object per line, flushing each.
func writeLogNDJSON(w http.ResponseWriter, r io.Reader) error {
	rc := http.NewResponseController(w)
	lines := newLogLines(r, maxLogLineBytes)
	for {
		line, _, err := lines.next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		s, _ := json.Marshal(struct {
			Line string `json:"line"`
		}{line})
		if _, err := fmt.Fprintf(w, "%s\n", s); err != nil {
			return err
		}
		if err := rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
			return err
		}
	}
}
