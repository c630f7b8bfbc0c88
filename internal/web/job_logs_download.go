package web

import (
	"mime"
	"net/http"

	"github.com/gin-gonic/gin"
)

// jobLogsDownload streams a container's whole log (or its previous
// container's) as a file, as it is read: never held in memory.
func (h *handler) jobLogsDownload(c *gin.Context) {
	q, problems := parseLogQuery(c.Request.URL.Query())
	if len(problems) > 0 {
		h.fail(c, errPageNotFound)
		return
	}
	q.Follow, q.TailLines, q.LimitBytes = false, 0, 0
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
	log, err := h.openLog(c.Request.Context(), u, rec, pod.Pod, ctr.Name, q)
	if err != nil {
		h.fail(c, err)
		return
	}
	defer log.Close()
	h.liftWriteDeadline(c)
	name := pod.Pod + "-" + ctr.Name
	if q.Previous {
		name += "-previous"
	}
	c.Header("Content-Type", "text/plain; charset=utf-8")
	c.Header("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": name + ".log"}))
	c.Header("Cache-Control", "no-store")
	c.Status(http.StatusOK)
	if err := copyFlushing(c.Writer, log); err != nil && c.Request.Context().Err() == nil {
		h.Log.WarnContext(c.Request.Context(), "log download ended early", "path", c.Request.URL.Path, "request_id", requestIDOf(c), "err", err)
	}
}
