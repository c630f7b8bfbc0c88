package web

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/acceptance"
	"github.com/gantry-dev/gantry/internal/auth"
	"github.com/gantry-dev/gantry/internal/catalog"
	"github.com/gantry-dev/gantry/internal/catalog/catalogadmin"
	"github.com/gantry-dev/gantry/internal/cost"
	"github.com/gantry-dev/gantry/internal/kube"
	"github.com/gantry-dev/gantry/internal/launch"
	"github.com/gantry-dev/gantry/internal/notify"
	"github.com/gantry-dev/gantry/internal/proxy"
	"github.com/gantry-dev/gantry/internal/quota"
	"github.com/gantry-dev/gantry/internal/reclaim"
	"github.com/gantry-dev/gantry/internal/store"
	"github.com/gantry-dev/gantry/internal/teams/teamadmin"
	"github.com/gantry-dev/gantry/views"
)

// problem is an error as a person reads it: a status, a title and a
// sentence or two. Raw error text never reaches the page.
type problem struct {
	Status  int
	Title   string
	Message string
}

// Stable codes of the API's error shape that name one problem more
// precisely than its status.
const (
	codeTemplateVersionOutdated = "template_version_outdated"
	codeBodyTooLarge            = "body_too_large"
)

// apiCode is the stable machine-readable name of err in the API's error
// shape: a precise code where one exists, else the status's general one.
func apiCode(err error, status int) string {
	var outdated *launch.OutdatedVersionError
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &outdated):
		return codeTemplateVersionOutdated
	case errors.As(err, &tooLarge):
		return codeBodyTooLarge
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

var (
	errPageNotFound     = errors.New("page not found")
	errMethodNotAllowed = errors.New("method not allowed")
	errPanic            = errors.New("handler panicked")
)

const signInAgain = " Go back to the home page to sign in again."

// describe is the one mapping from errors to status codes and words.
func describe(err error) problem {
	var idlePolicy *reclaim.PolicyError
	var idleReason reclaim.ReasonError
	var expired *oidc.TokenExpiredError
	var quotaDenied *quota.DeniedError
	var quotaInvalid *quota.ValidationError
	var teamInvalid *teamadmin.ValidationError
	var catalogInvalid *catalogadmin.ValidationError
	var publishRefused *catalogadmin.PolicyError
	var forbidden *launch.ForbiddenError
	var collision *launch.CollisionError
	var scale *launch.ScaleError
	var fields catalog.FieldErrors
	var outdated *launch.OutdatedVersionError
	var tooLarge *http.MaxBytesError
	var reserved *auth.ReservedNameError
	var tokenOwner *auth.TokenOwnerError
	var acceptanceDenied *acceptance.DeniedError
	var proxyInvalid *proxy.ValidationError
	var costInvalid *cost.InputError
	var webhookURL *notify.URLError
	switch {
	case errors.As(err, &acceptanceDenied):
		return problem{http.StatusForbidden, "Not allowed", acceptanceDenied.Reason}
	case errors.Is(err, acceptance.ErrRunInProgress):
		return problem{http.StatusConflict, "Already running", "An acceptance run of this pool is already running; wait for it to finish, then start another."}
	case errors.As(err, &tooLarge):
		return problem{http.StatusRequestEntityTooLarge, "Request too large",
			fmt.Sprintf("The request body is larger than the %s this portal accepts, so it was not read. Send less data.", sizeInWords(tooLarge.Limit))}
	case errors.As(err, &outdated):
		return problem{http.StatusConflict, "Not the newest version", outdated.Error()}
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
	case errors.As(err, &reserved):
		return problem{http.StatusForbidden, "Sign-in was refused",
			"Your identity provider account has the " + reserved.What + " \"" + reserved.Name + "\", which starts with \"system:\", a prefix Kubernetes reserves for its own components. This portal does not sign in such accounts. Ask your identity provider's admins to rename it."}
	case errors.As(err, &tokenOwner) && tokenOwner.Inactive > 0:
		return problem{http.StatusUnauthorized, "Token paused",
			"This API token stopped working because " + tokenOwner.Error() + ". Sign in to the portal once to make it work again."}
	case errors.As(err, &tokenOwner):
		return problem{http.StatusUnauthorized, "Token paused",
			"This API token stopped working because " + tokenOwner.Error() + ". It works again once its owner signs in as a member of a team or of the admins."}
	case errors.Is(err, auth.ErrReadOnlyToken):
		return problem{http.StatusForbidden, "Read-only token",
			"This API token is read-only: it may read (GET) but not launch, stop or change anything. Use a token made without \"read-only\" for this call."}
	case errors.Is(err, auth.ErrInvalidToken):
		return problem{http.StatusUnauthorized, "Not signed in",
			"Sign in, or send a valid personal API token as \"Authorization: Bearer gty_…\". The token may be unknown, expired or revoked."}
	case errors.As(err, &forbidden):
		return problem{http.StatusForbidden, "Not allowed", forbidden.Error()}
	case errors.Is(err, proxy.ErrRefused):
		return problem{http.StatusForbidden, "Not yours to open",
			"Only the notebook's owner can open it, and members of its team once the owner shares it from the job page."}
	case errors.Is(err, proxy.ErrNotOwner):
		return problem{http.StatusForbidden, "Not allowed", "Only the notebook's owner can share it with the team or stop sharing it."}
	case errors.Is(err, errCrossOrigin):
		return problem{http.StatusForbidden, "Request refused", "This request to the notebook came from a page of another site, so it was refused."}
	case errors.Is(err, errNotANotebook):
		return problem{http.StatusBadRequest, "Not possible for this job", "Only notebooks are opened and shared this way."}
	case errors.As(err, &proxyInvalid):
		return problem{http.StatusUnprocessableEntity, "Check your input", proxyInvalid.Error()}
	case errors.As(err, &collision):
		return problem{http.StatusConflict, "Name already taken", collision.Error()}
	case errors.As(err, &scale):
		return problem{http.StatusUnprocessableEntity, "Not scaled", scale.Error()}
	case errors.As(err, &fields):
		return problem{http.StatusUnprocessableEntity, "Check your input", fields.Error()}
	case errors.As(err, &idlePolicy):
		return problem{http.StatusUnprocessableEntity, "Check your input", idlePolicy.Error()}
	case errors.As(err, &idleReason):
		return problem{http.StatusUnprocessableEntity, "Say why", idleReason.Error()}
	case errors.Is(err, reclaim.ErrNotNotebook):
		return problem{http.StatusConflict, "Not possible for this job", "Only notebooks are stopped when idle, so only a notebook can be kept running."}
	case errors.Is(err, errNotIdleLead):
		return problem{http.StatusForbidden, "Leads only", "Only the team's leads and admins can exempt a job from idle reclaim."}
	case errors.Is(err, launch.ErrNotSupported):
		return problem{http.StatusBadRequest, "Not possible for this job", "This action does not apply to this kind of job."}
	case errors.Is(err, kube.ErrNotSynced):
		return problem{http.StatusServiceUnavailable, "Still starting", "The portal is still reading the cluster. Try again in a few seconds."}
	case errors.Is(err, store.ErrNotFound), errors.Is(err, errPageNotFound), errors.Is(err, kube.ErrNotFound), errors.Is(err, errNotYourTeam):
		return problem{http.StatusNotFound, "Not found", "There is nothing here. It may have been removed, or the link is wrong."}
	case errors.As(err, &quotaDenied):
		return problem{http.StatusForbidden, "Not allowed", quotaDenied.Reason}
	case errors.As(err, &quotaInvalid):
		return problem{http.StatusUnprocessableEntity, "Check your input", quotaInvalid.Error()}
	case errors.As(err, &catalogInvalid):
		return problem{http.StatusUnprocessableEntity, "Check your input", catalogInvalid.Error()}
	case errors.As(err, &publishRefused):
		return problem{http.StatusUnprocessableEntity, "Not published", publishRefused.Error()}
	case errors.As(err, &teamInvalid):
		return problem{http.StatusUnprocessableEntity, "Check your input", teamInvalid.Error()}
	case errors.Is(err, errAccountingOff):
		return problem{http.StatusNotFound, "Not found", "Accepted results and shared costs are not switched on in this portal."}
	case errors.Is(err, errNotOwnerOrLead):
		return problem{http.StatusForbidden, "Not allowed", "Only the job's owner, a lead of its team or an admin can accept or reject its result."}
	case errors.Is(err, errNotLead):
		return problem{http.StatusForbidden, "Not allowed", "Only a lead of this team or an admin can change the team's acceptance rule."}
	case errors.As(err, &costInvalid):
		return problem{http.StatusUnprocessableEntity, "Check your input", costInvalid.Error()}
	case errors.As(err, &webhookURL):
		return problem{http.StatusUnprocessableEntity, "Check the webhook URL", "The webhook URL was not saved: " + webhookURL.Reason + "."}
	case errors.Is(err, notify.ErrNotLead):
		return problem{http.StatusForbidden, "Team leads only", "Only the team's leads and Gantry admins can see or change its webhook."}
	case errors.Is(err, errNotAdmin):
		return problem{http.StatusForbidden, "Admins only", "Only Gantry admins can open this page."}
	case errors.Is(err, errQuotaOff):
		return problem{http.StatusNotFound, "Not available", "Quota requests are not set up on this portal."}
	case errors.Is(err, kube.ErrForbidden):
		return problem{http.StatusForbidden, "Refused by the cluster", "Kubernetes refused this change: your role does not allow it."}
	case errors.Is(err, kube.ErrConflict):
		return problem{http.StatusConflict, "Changed meanwhile", "Someone changed this at the same time. Reload the page and try again."}
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
