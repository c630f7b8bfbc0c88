package web

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/auth"
	"github.com/gantry-dev/gantry/views"
)

// apiTokenBody is the body of POST /api/v1/tokens.
type apiTokenBody struct {
	Name          string `json:"name"`
	ExpiresInDays int    `json:"expiresInDays"`
	ReadOnly      bool   `json:"readOnly"`
}

// apiNewToken is a token just made, with its secret, shown this once.
type apiNewToken struct {
	apiToken
	Secret string `json:"secret"`
}

// apiTokensCreate makes a personal API token for the caller, signed in by
// the browser session; a token cannot make another.
func (h *handler) apiTokensCreate(c *gin.Context) {
	u, _ := auth.CurrentUser(c)
	// A leaked token must not be able to outlive its own expiry.
	if auth.HasBearer(c.Request) {
		c.AbortWithStatusJSON(http.StatusForbidden, apiErrorBody{Error: "Not allowed", Code: apiCode(nil, http.StatusForbidden), RequestID: requestIDOf(c),
			Message: "An API token cannot make another token, so that a leaked one cannot outlive its expiry. Sign in to the portal to make one."})
		return
	}
	var body apiTokenBody
	if err := bindJSON(c, &body); err != nil {
		h.apiBadBody(c, err, `Send a JSON object: {"name","expiresInDays","readOnly"}.`)
		return
	}
	req, errs := checkTokenRequest(strings.TrimSpace(body.Name), strconv.Itoa(body.ExpiresInDays), body.ReadOnly)
	if len(errs) > 0 {
		fields := map[string]string{}
		for k, v := range errs {
			fields[map[string]string{views.FieldTokenName: "name", views.FieldTokenExpiresIn: "expiresInDays"}[k]] = v
		}
		h.apiInvalid(c, fields)
		return
	}
	tok, secret, err := h.issueToken(c, u, req)
	if err != nil {
		h.fail(c, err)
		return
	}
	c.JSON(http.StatusCreated, apiNewToken{apiToken: apiTokenOf(tok), Secret: secret})
}
