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
		Errors:        map[string]string{},
	}
	req := tokenRequest{Name: form.Name, ReadOnly: form.ReadOnly}
	switch n := utf8.RuneCountInString(form.Name); {
	case n == 0:
		form.Errors[views.FieldTokenName] = "Give the token a name, for example the script or CI job that uses it."
	case n > 64:
		form.Errors[views.FieldTokenName] = "The name is too long: use at most 64 characters."
	}
	days, err := strconv.Atoi(form.ExpiresInDays)
	switch {
	case err != nil:
		form.Errors[views.FieldTokenExpiresIn] = "Enter the number of days the token stays valid, for example 30."
	case days < 1:
		form.Errors[views.FieldTokenExpiresIn] = fmt.Sprintf("A token must be valid for at least 1 day and at most %d.", maxTokenDays)
	case days > maxTokenDays:
		form.Errors[views.FieldTokenExpiresIn] = fmt.Sprintf("A token can live at most %d days, so that a leaked one stops working on its own; make a new one when it expires.", maxTokenDays)
	}
	req.Days = days
	return req, form
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
	secret, err := auth.GenerateToken()
	if err != nil {
		h.fail(c, err)
		return
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
		h.fail(c, err)
		return
	}
	if err := h.Audit.Record(ctx, audit.Event{
		Actor:  u.Username,
		Action: audit.ActionTokenCreate,
		Target: fmt.Sprintf("api-token/%d", tok.ID),
		Detail: map[string]any{"name": tok.Name, "prefix": tok.Prefix, "expires_at": tok.ExpiresAt, "read_only": tok.ReadOnly},
		IP:     c.ClientIP(),
		Via:    u.Via(),
	}); err != nil {
		h.fail(c, err)
		return
	}
	h.Sessions.Put(ctx, keyNewToken, secret.Secret)
	h.addFlash(c, views.FlashSuccess, fmt.Sprintf("Token %q created. Copy it now: it will not be shown again.", tok.Name))
	redirectSeeOther(c, "/profile")
}
