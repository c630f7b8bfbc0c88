package web

import (
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/gin-gonic/gin"
	corev1 "k8s.io/api/core/v1"

	"github.com/gantry-dev/gantry/internal/kube"
	"github.com/gantry-dev/gantry/views"
)

// jobLogs is a job's log page: pickers for its pods and containers, the
// tail of the chosen log (growing towards older lines on request, up to
// maxPageTailLines), and links to the previous container, following and
// the download. The page never holds more than its tail.
func (h *handler) jobLogs(c *gin.Context) {
	q, problems := parseLogQuery(c.Request.URL.Query())
	if len(problems) > 0 {
		h.fail(c, errPageNotFound)
		return
	}
	q.Follow, q.LimitBytes = false, 0
	if q.TailLines == 0 {
		q.TailLines = pageTailLines
	}
	q.TailLines = min(q.TailLines, maxPageTailLines)
	u, rec, targets, err := h.jobLogTargets(c)
	if err != nil {
		h.fail(c, err)
		return
	}
	base := jobURL(rec.Team, rec.Name)
	p := views.JobLogsProps{Team: rec.Team, Name: rec.Name, JobURL: base}
	if len(targets) == 0 {
		p.Message = "This job has no pods yet: its log appears here once a pod starts."
		h.render(c, http.StatusOK, views.JobLogsPage(h.nav(c, "jobs"), p))
		return
	}
	pod, ctr, err := logTarget(targets, q)
	if err != nil {
		h.fail(c, err)
		return
	}
	logURL := func(page string, v url.Values) string {
		v.Set("pod", pod.Pod)
		v.Set("container", ctr.Name)
		return base + "/logs" + page + "?" + v.Encode()
	}
	for _, t := range targets {
		for _, tc := range t.Containers {
			label := t.Pod + " / " + tc.Name
			if tc.Restarts > 0 {
				label += " (restarted " + strconv.Itoa(int(tc.Restarts)) + "×)"
			}
			p.Containers = append(p.Containers, views.LogChoice{Label: label, Selected: t.Pod == pod.Pod && tc.Name == ctr.Name,
				URL: base + "/logs?" + url.Values{"pod": {t.Pod}, "container": {tc.Name}}.Encode()})
		}
	}
	p.Pod, p.Container, p.Previous = pod.Pod, ctr.Name, q.Previous
	prev := url.Values{}
	if q.Previous {
		prev.Set("previous", "true")
		p.CurrentURL = logURL("", url.Values{})
	} else if ctr.Restarts > 0 {
		p.PreviousURL = logURL("", url.Values{"previous": {"true"}})
	}
	p.RefreshURL = logURL("", url.Values{"previous": prev["previous"], "tailLines": {strconv.FormatInt(q.TailLines, 10)}})
	p.FollowURL = logURL("/follow", url.Values{})
	p.DownloadURL = logURL("/download", prev)

	log, err := h.openLog(c.Request.Context(), u, rec, pod.Pod, ctr.Name, q)
	switch {
	case errors.Is(err, kube.ErrNotFound) && q.Previous:
		p.Message = "There is no log of a previous container: it has not restarted, or the node no longer keeps it."
	case errors.Is(err, kube.ErrNotFound):
		p.Message = noLogMessage(pod.Phase)
	case err != nil:
		h.fail(c, err)
		return
	default:
		defer log.Close()
		lines := newLogLines(log, maxLogLineBytes)
		for {
			line, cut, err := lines.next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				h.fail(c, err)
				return
			}
			if cut {
				p.Truncated++
			}
			p.Lines = append(p.Lines, line)
		}
		if len(p.Lines) == 0 {
			p.Message = "The log is empty so far."
		}
	}
	if int64(len(p.Lines)) >= q.TailLines {
		if q.TailLines < maxPageTailLines {
			older := url.Values{"tailLines": {strconv.FormatInt(min(q.TailLines*4, maxPageTailLines), 10)}, "previous": prev["previous"]}
			p.OlderURL = logURL("", older)
		} else {
			p.AtLimit = true
		}
	}
	h.render(c, http.StatusOK, views.JobLogsPage(h.nav(c, "jobs"), p))
}

// noLogMessage says why a container of a pod in phase has no log to read:
// one that has not started has none yet, but one whose pod has ended ran
// (the job page says how it ended) and its node no longer keeps its log.
// It used to say "has not started" under a job that had succeeded.
func noLogMessage(phase corev1.PodPhase) string {
	switch phase {
	case corev1.PodSucceeded, corev1.PodFailed:
		return "The container ran and has ended, but its log is gone: its node no longer keeps it. The job's page says how it ended."
	case corev1.PodRunning:
		return "There is no log yet: the container has not started, though its pod runs (an init container may still be at work)."
	default:
		return "There is no log yet: the container has not started."
	}
}
