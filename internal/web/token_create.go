package web

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/audit"
	"github.com/gantry-dev/gantry/internal/auth"
	"github.com/gantry-dev/gantry/internal/store"
	"github.com/gantry-dev/gantry/views"
)

// maxTokenDays is the longest life of an API token.
const maxTokenDays = 90

// tokenRequest is the create-token form, parsed.
type tokenRequest struct {
	Name     string
	Days     int
	ReadOnly bool
}

// parseTokenForm reads and validates the form; field errors are in words.
func parseTokenForm(c *gin.Context) (tokenRequest, views.TokenForm) {
	form := views.TokenForm{
		Name:          strings.TrimSpace(c.PostForm(views.FieldTokenName)),
		ExpiresInDays: strings.TrimSpace(c.PostForm(views.FieldTokenExpiresIn)),
		ReadOnly:      c.PostForm(views.FieldTokenReadOnly) == "true",
		MaxDays:       maxTokenDays,
	}
	req, errs := checkTokenRequest(form.Name, form.ExpiresInDays, form.ReadOnly)
	form.Errors = errs
	return req, form
}

// checkTokenRequest validates a token's name and life in days (as typed),
// for the form and the API alike; the errors are keyed by the form's fields.
func checkTokenRequest(name, daysText string, readOnly bool) (tokenRequest, map[string]string) {
	errs := map[string]string{}
	req := tokenRequest{Name: name, ReadOnly: readOnly}
	switch n := utf8.RuneCountInString(name); {
	case n == 0:
		errs[views.FieldTokenName] = "Give the token a name, for example the script or CI job that uses it."
	case n > 64:
		errs[views.FieldTokenName] = "The name is too long: use at most 64 characters."
	}
	days, err := strconv.Atoi(daysText)
	switch {
	case err != nil:
		errs[views.FieldTokenExpiresIn] = "Enter the number of days the token stays valid, for example 30."
	case days < 1:
		errs[views.FieldTokenExpiresIn] = fmt.Sprintf("A token must be valid for at least 1 day and at most %d.", maxTokenDays)
	case days > maxTokenDays:
		errs[views.FieldTokenExpiresIn] = fmt.Sprintf("A token can live at most %d days, so that a leaked one stops working on its own; make a new one when it expires.", maxTokenDays)
	}
	req.Days = days
	return req, errs
}

// tokenCreate makes a personal API token and shows its secret once.
func (h *handler) tokenCreate(c *gin.Context) {
	ctx := c.Request.Context()
	u, _ := auth.CurrentUser(c)
	req, form := parseTokenForm(c)
	if len(form.Errors) > 0 {
		h.renderProfile(c, http.StatusUnprocessableEntity, form)
		return
	}
	tok, secret, err := h.issueToken(c, u, req)
	if err != nil {
		h.fail(c, err)
		return
	}
	h.Sessions.Put(ctx, keyNewToken, secret)
	h.addFlash(c, views.FlashSuccess, fmt.Sprintf("Token %q created. Copy it now: it will not be shown again.", tok.Name))
	redirectSeeOther(c, "/profile")
}

// issueToken makes a personal API token for u and records it in the audit
// log; the secret is returned this once and never stored.
func (h *handler) issueToken(c *gin.Context, u *auth.User, req tokenRequest) (store.APIToken, string, error) {
	ctx := c.Request.Context()
	secret, err := auth.GenerateToken()
	if err != nil {
		return store.APIToken{}, "", err
	}
	now := h.Now().UTC()
	tok, err := h.Store.CreateAPIToken(ctx, store.APIToken{
		UserID:    u.ID,
		Username:  u.Username,
		Name:      req.Name,
		Hash:      secret.Hash,
		Prefix:    secret.Prefix,
		CreatedAt: now,
		ExpiresAt: now.Add(time.Duration(req.Days) * 24 * time.Hour),
		ReadOnly:  req.ReadOnly,
	})
	if err != nil {
		return store.APIToken{}, "", err
	}
	if err := h.Audit.Record(ctx, audit.Event{
		Actor:  u.Username,
		Action: audit.ActionTokenCreate,
		Target: fmt.Sprintf("api-token/%d", tok.ID),
		Detail: map[string]any{"name": tok.Name, "prefix": tok.Prefix, "expires_at": tok.ExpiresAt, "read_only": tok.ReadOnly},
		IP:     c.ClientIP(),
		Via:    u.Via(),
	}); err != nil {
		return store.APIToken{}, "", err
	}
	return tok, secret.Secret, nil
}
