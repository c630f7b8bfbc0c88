package web

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/auth"
	"github.com/gantry-dev/gantry/internal/problem"
	"github.com/gantry-dev/gantry/views"
)

// describedError is an error as a person reads it: a status, a title and a
// sentence or two. Raw error text never reaches the page.
type describedError struct {
	Status  int
	Title   string
	Message string
}

// codeBodyTooLarge is the API's code for a body over the size limit.
const codeBodyTooLarge = "body_too_large"

// apiCode is the stable machine-readable name of err in the API's error
// shape: a precise code where one exists, else the status's general one.
func apiCode(err error, status int) string {
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return codeBodyTooLarge
	}
	if code := problem.Describe(err).Code; code != "" {
		return code
	}
	switch status {
	case http.StatusBadRequest:
		return "bad_request"
	case http.StatusUnauthorized:
		return "unauthenticated"
	case http.StatusForbidden:
		return "forbidden"
	case http.StatusNotFound:
		return "not_found"
	case http.StatusMethodNotAllowed:
		return "method_not_allowed"
	case http.StatusConflict:
		return "conflict"
	case http.StatusRequestEntityTooLarge:
		return codeBodyTooLarge
	case http.StatusUnprocessableEntity:
		return "invalid"
	case http.StatusBadGateway:
		return "bad_gateway"
	case http.StatusServiceUnavailable:
		return "unavailable"
	default:
		return "internal"
	}
}

// statusOf is the HTTP status of each kind of problem.
func statusOf(k problem.Kind) int {
	switch k {
	case problem.Invalid:
		return http.StatusUnprocessableEntity
	case problem.NotFound:
		return http.StatusNotFound
	case problem.Forbidden:
		return http.StatusForbidden
	case problem.Conflict:
		return http.StatusConflict
	case problem.Unavailable:
		return http.StatusServiceUnavailable
	case problem.Unauthenticated:
		return http.StatusUnauthorized
	case problem.BadRequest:
		return http.StatusBadRequest
	case problem.Upstream:
		return http.StatusBadGateway
	case problem.TooLarge:
		return http.StatusRequestEntityTooLarge
	case problem.MethodNotAllowed:
		return http.StatusMethodNotAllowed
	default:
		return http.StatusInternalServerError
	}
}

var (
	errPageNotFound     = problem.New("page not found", problem.Problem{Kind: problem.NotFound})
	errMethodNotAllowed = problem.New("method not allowed", problem.Problem{Kind: problem.MethodNotAllowed})
	errPanic            = errors.New("handler panicked")
)

// describe is the one mapping from errors to status codes and words: an
// error says its own kind and words (package problem); only errors of the
// standard library and the OIDC client are worded here.
func describe(err error) describedError {
	var tooLarge *http.MaxBytesError
	var expired *oidc.TokenExpiredError
	switch {
	case errors.As(err, &tooLarge):
		return describedError{Status: http.StatusRequestEntityTooLarge, Title: "Request too large",
			Message: fmt.Sprintf("The request body is larger than the %s this portal accepts, so it was not read. Send less data.", sizeInWords(tooLarge.Limit))}
	case errors.As(err, &expired):
		// Checked before the auth.ErrIDTokenInvalid it is wrapped with.
		return describedError{Status: http.StatusBadRequest, Title: "Sign-in could not be completed",
			Message: "The identity provider's ID token has expired, so it was refused. Check that this server's clock is right." + auth.SignInAgain}
	}
	p := problem.Describe(err)
	return describedError{Status: statusOf(p.Kind), Title: p.Title, Message: p.Detail}
}

// fail logs err and answers with its status: an error page for browsers,
// JSON for the API.
func (h *handler) fail(c *gin.Context, err error) {
	p := describe(err)
	level := h.levelFor(p.Status)
	h.Log.Log(c.Request.Context(), level, "request failed", "status", p.Status, "path", c.Request.URL.Path, "request_id", requestIDOf(c), "err", err)
	if c.Writer.Written() {
		c.Abort()
		return
	}
	if isAPI(c) {
		c.AbortWithStatusJSON(p.Status, gin.H{"error": p.Title, "code": apiCode(err, p.Status), "message": p.Message, "request_id": requestIDOf(c)})
		return
	}
	h.render(c, p.Status, views.ErrorPage(h.nav(c, ""), views.ErrorProps{
		Status:    p.Status,
		Title:     p.Title,
		Message:   p.Message,
		RequestID: requestIDOf(c),
	}))
	c.Abort()
}

func (h *handler) levelFor(status int) slog.Level {
	switch {
	case status >= 500:
		return slog.LevelError
	case status >= 400:
		return slog.LevelWarn
	default:
		return slog.LevelInfo
	}
}

func (h *handler) notFound(c *gin.Context) { h.fail(c, errPageNotFound) }

func (h *handler) methodNotAllowed(c *gin.Context) { h.fail(c, errMethodNotAllowed) }

func (h *handler) recovered(c *gin.Context, v any) {
	h.fail(c, fmt.Errorf("%w: %v", errPanic, v))
}

// sizeInWords writes a byte count as a person reads it.
func sizeInWords(n int64) string {
	const mib = 1 << 20
	if n >= mib && n%mib == 0 {
		return fmt.Sprintf("%d MiB", n/mib)
	}
	return fmt.Sprintf("%d bytes", n)
}
