package web

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/proxy"
)

// apiEndpointKeyBody is the body of POST /api/v1/teams/{team}/jobs/{name}/keys.
type apiEndpointKeyBody struct {
	Label         string `json:"label"`
	ExpiresInDays int    `json:"expiresInDays"`
}

// apiNewEndpointKey is a key just made, with its secret, shown this once.
type apiNewEndpointKey struct {
	apiEndpointKey
	Secret string `json:"secret"`
	// URL is the endpoint's base URL through the portal.
	URL string `json:"url"`
}

// apiEndpointKeysCreate makes a key for the team's inference endpoint, as
// the job page's key form does.
func (h *handler) apiEndpointKeysCreate(c *gin.Context) {
	u, rec, ok := h.jobOf(c, endpoint)
	if !ok {
		return
	}
	var body apiEndpointKeyBody
	if err := bindJSON(c, &body); err != nil {
		h.apiBadBody(c, err, `Send a JSON object: {"label", "expiresInDays"}.`)
		return
	}
	if body.ExpiresInDays == 0 {
		body.ExpiresInDays = proxy.DefaultKeyDays
	}
	actor := proxy.Actor{Username: u.Username, IP: c.ClientIP(), Via: u.Via()}
	key, err := h.Proxy.Access.CreateKey(c.Request.Context(), actor, rec.Team, rec.Name, body.Label, body.ExpiresInDays)
	if err != nil {
		h.apiFail(c, err)
		return
	}
	c.JSON(http.StatusCreated, apiNewEndpointKey{apiEndpointKey: apiEndpointKeyOf(key.Key, h.Now()), Secret: key.Secret,
		URL: h.PublicURL.String() + endpointURL(rec.Team, rec.Name)})
}
