package web

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/auth"
	"github.com/gantry-dev/gantry/internal/store"
	"github.com/gantry-dev/gantry/views"
)

// problem is an error as a person reads it: a status, a title and a
// sentence or two. Raw error text never reaches the page.
type problem struct {
	Status  int
	Title   string
	Message string
}

var (
	errPageNotFound     = errors.New("page not found")
	errMethodNotAllowed = errors.New("method not allowed")
	errPanic            = errors.New("handler panicked")
)

const signInAgain = " Go back to the home page to sign in again."

// describe is the one mapping from errors to status codes and words.
func describe(err error) problem {
	var expired *oidc.TokenExpiredError
	switch {
	case errors.Is(err, errCSRF):
		return problem{http.StatusForbidden, "Request refused",
			"The form you sent is missing its security token or the token does not match this browser session, so nothing was changed. Reload the page and try again."}
	case errors.Is(err, auth.ErrNoLoginInProgress):
		return problem{http.StatusBadRequest, "Sign-in could not be completed",
			"This sign-in response is not expected by this browser session: it was already used, it expired, or it was started in another browser." + signInAgain}
	case errors.Is(err, auth.ErrStateMismatch):
		return problem{http.StatusBadRequest, "Sign-in could not be completed",
			"The sign-in response does not match the sign-in this browser started (the state check failed), so it was refused." + signInAgain}
	case errors.Is(err, auth.ErrNonceMismatch):
		return problem{http.StatusBadRequest, "Sign-in could not be completed",
			"The identity provider's answer belongs to a different sign-in attempt (the nonce check failed), so it was refused." + signInAgain}
	case errors.As(err, &expired):
		return problem{http.StatusBadRequest, "Sign-in could not be completed",
			"The identity provider's ID token has expired, so it was refused. Check that this server's clock is right." + signInAgain}
	case errors.Is(err, auth.ErrIDTokenInvalid):
		return problem{http.StatusBadRequest, "Sign-in could not be completed",
			"The identity provider's ID token is not valid for this portal (wrong issuer, audience or signature), so it was refused." + signInAgain}
	case errors.Is(err, auth.ErrCodeExchange):
		return problem{http.StatusBadGateway, "Sign-in could not be completed",
			"The identity provider did not accept the sign-in code. It may have been used already or expired." + signInAgain}
	case errors.Is(err, auth.ErrProviderRefused):
		return problem{http.StatusForbidden, "Sign-in was refused",
			"The identity provider refused the sign-in." + signInAgain}
	case errors.Is(err, auth.ErrMissingUsername):
		return problem{http.StatusBadRequest, "Sign-in could not be completed",
			"The identity provider did not say who you are (no username in the ID token). Ask the Gantry admins to check the provider's configuration."}
	case errors.Is(err, auth.ErrInvalidToken):
		return problem{http.StatusUnauthorized, "Not signed in",
			"Sign in, or send a valid personal API token as \"Authorization: Bearer gty_…\". The token may be unknown, expired or revoked."}
	case errors.Is(err, store.ErrNotFound), errors.Is(err, errPageNotFound):
		return problem{http.StatusNotFound, "Not found", "There is nothing here. It may have been removed, or the link is wrong."}
	case errors.Is(err, errMethodNotAllowed):
		return problem{http.StatusMethodNotAllowed, "Not allowed", "This page does not accept that kind of request."}
	default:
		return problem{http.StatusInternalServerError, "Something went wrong",
			"Something went wrong on our side and the request was not completed. Try again; if it keeps happening, tell the Gantry admins the request id below."}
	}
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
		c.AbortWithStatusJSON(p.Status, gin.H{"error": p.Title, "message": p.Message, "request_id": requestIDOf(c)})
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
