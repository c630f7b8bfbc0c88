package web

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"

	"github.com/a-h/templ"
	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/views"
)

// jobLogsFollow streams a container's log as HTML while it is written,
// from its last lines on, without script: the browser renders each line as
// its chunk arrives. The stream ends after followLimit or when the reader
// leaves.
func (h *handler) jobLogsFollow(c *gin.Context) {
	q, problems := parseLogQuery(c.Request.URL.Query())
	if len(problems) > 0 {
		h.fail(c, errPageNotFound)
		return
	}
	q.Previous, q.Follow, q.TailLines, q.LimitBytes = false, true, pageTailLines, 0
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
	ctx, cancel := context.WithTimeout(c.Request.Context(), followLimit)
	defer cancel()
	log, err := h.openLog(ctx, u, rec, pod.Pod, ctr.Name, q)
	if err != nil {
		h.fail(c, err)
		return
	}
	defer log.Close()
	h.liftWriteDeadline(c)
	sel := url.Values{"pod": {pod.Pod}, "container": {ctr.Name}}.Encode()
	base := jobURL(rec.Team, rec.Name) + "/logs"
	lines := templ.ComponentFunc(func(ctx context.Context, w io.Writer) error {
		flusher, _ := w.(interface{ Flush() error })
		r := newLogLines(log, maxLogLineBytes)
		for {
			line, _, err := r.next()
			if errors.Is(err, io.EOF) || ctx.Err() != nil {
				return nil
			}
			if err != nil {
				return err
			}
			if err := views.LogLine(line).Render(ctx, w); err != nil {
				return err
			}
			if flusher != nil {
				if err := flusher.Flush(); err != nil {
					return err
				}
			}
		}
	})
	h.render(c, http.StatusOK, views.JobLogsFollowPage(h.nav(c, "jobs"), views.JobLogsFollowProps{
		Team: rec.Team, Name: rec.Name, Pod: pod.Pod, Container: ctr.Name,
		BackURL: base + "?" + sel, FollowURL: base + "/follow?" + sel, Lines: lines,
	}))
}
