package web

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/auth"
	"github.com/gantry-dev/gantry/internal/kube"
	"github.com/gantry-dev/gantry/internal/store"
)

// JobLogs reads the logs of a job's containers as the user.
type JobLogs interface {
	Targets(namespace, instance string) ([]kube.LogTarget, error)
	Open(ctx context.Context, username string, groups []string, req kube.LogRequest) (io.ReadCloser, error)
}

// Limits that keep a log out of the portal's memory and the browser's.
const (
	// maxLogLineBytes is the longest line shown on the page or in JSON;
	// the rest of a longer line is dropped there (text and download keep it).
	maxLogLineBytes = 16 << 10
	// pageTailLines and maxPageTailLines are the lines the log page shows
	// at first and at most; older lines are in the download.
	pageTailLines    = 500
	maxPageTailLines = 10000
	// followLimit ends a followed stream; the reader can follow again.
	followLimit = 30 * time.Minute
)

// errNoLogTarget is a pod or container that is not the job's.
var errNoLogTarget = fmt.Errorf("no such pod or container in this job: %w", kube.ErrNotFound)

// logQuery is what a logs request asks for.
type logQuery struct {
	Pod, Container        string
	Previous, Follow      bool
	TailLines, LimitBytes int64
}

// parseLogQuery reads pod, container, previous, follow, tailLines and
// limitBytes; problems are keyed by parameter.
func parseLogQuery(q url.Values) (logQuery, map[string]string) {
	out := logQuery{Pod: q.Get("pod"), Container: q.Get("container")}
	problems := map[string]string{}
	for name, dst := range map[string]*bool{"previous": &out.Previous, "follow": &out.Follow} {
		if v := q.Get(name); v != "" {
			b, err := strconv.ParseBool(v)
			if err != nil {
				problems[name] = name + " must be true or false."
			}
			*dst = b
		}
	}
	for name, dst := range map[string]*int64{"tailLines": &out.TailLines, "limitBytes": &out.LimitBytes} {
		if v := q.Get(name); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				problems[name] = name + " must be a whole number, 0 or more."
			}
			*dst = n
		}
	}
	return out, problems
}

// logTarget is the job's container a query names: the first pod and its
// first regular container unless named. It fails with errNoLogTarget for
// a pod or container that is not the job's.
func logTarget(targets []kube.LogTarget, q logQuery) (kube.LogTarget, kube.LogContainer, error) {
	for _, t := range targets {
		if q.Pod != "" && t.Pod != q.Pod {
			continue
		}
		if len(t.Containers) == 0 {
			break
		}
		if q.Container == "" {
			// The last container is a regular one (init containers come first).
			return t, t.Containers[len(t.Containers)-1], nil
		}
		for _, c := range t.Containers {
			if c.Name == q.Container {
				return t, c, nil
			}
		}
		break
	}
	return kube.LogTarget{}, kube.LogContainer{}, errNoLogTarget
}

// jobLogTargets reads the job the request names (if the user may see it)
// and its pods and containers.
func (h *handler) jobLogTargets(c *gin.Context) (*auth.User, store.Launch, []kube.LogTarget, error) {
	u, rec, err := h.jobRecord(c)
	if err != nil {
		return u, rec, nil, err
	}
	targets, err := h.Logs.Targets(rec.Namespace, rec.Name)
	return u, rec, targets, err
}

// openLog opens the chosen container's log as the user.
func (h *handler) openLog(ctx context.Context, u *auth.User, rec store.Launch, pod, container string, q logQuery) (io.ReadCloser, error) {
	return h.Logs.Open(ctx, u.Username, u.ClusterGroups, kube.LogRequest{Namespace: rec.Namespace, Pod: pod, Container: container,
		Previous: q.Previous, Follow: q.Follow, TailLines: q.TailLines, LimitBytes: q.LimitBytes})
}

// liftWriteDeadline lets a streamed answer outlive the server's
// WriteTimeout; the request's context still ends it.
func (h *handler) liftWriteDeadline(c *gin.Context) {
	if err := http.NewResponseController(c.Writer).SetWriteDeadline(time.Time{}); err != nil {
		h.Log.ErrorContext(c.Request.Context(), "streamed answer keeps the write timeout: it may be cut", "path", c.Request.URL.Path, "err", err)
	}
}

// copyFlushing copies a log to the client as it is read, flushing each
// read so followed lines arrive at once. It holds one buffer, never the log.
func copyFlushing(w http.ResponseWriter, r io.Reader) error {
	rc := http.NewResponseController(w)
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return werr
			}
			if ferr := rc.Flush(); ferr != nil && !errors.Is(ferr, http.ErrNotSupported) {
				return ferr
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// logLines reads a log line by line, cutting lines longer than max bytes.
type logLines struct {
	r   *bufio.Reader
	max int
}

func newLogLines(r io.Reader, maxBytes int) *logLines {
	return &logLines{r: bufio.NewReaderSize(r, 64<<10), max: maxBytes}
}

// next returns the next line without its newline and whether it was cut;
// io.EOF after the last one.
func (l *logLines) next() (string, bool, error) {
	var b []byte
	cut := false
	for {
		frag, err := l.r.ReadSlice('\n')
		end := err == nil
		if end {
			frag = frag[:len(frag)-1]
		}
		if room := l.max - len(b); len(frag) > room {
			frag, cut = frag[:max(room, 0)], true
		}
		b = append(b, frag...)
		switch {
		case end:
			return string(b), cut, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && (len(b) > 0 || cut):
			return string(b), cut, nil
		default:
			return "", false, err
		}
	}
}
