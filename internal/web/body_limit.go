package web

import (
	"errors"
	"fmt"
	"mime"
	"net/http"

	"github.com/gin-gonic/gin"
)

// MaxBodyBytes is the largest form or JSON body the portal reads.
const MaxBodyBytes = 1 << 20

// limitBody refuses a body over MaxBodyBytes with 413 before any handler
// or the CSRF check reads it: at once when the declared length is too
// large, else when reading stops at the limit. Form bodies are parsed here,
// inside the limit, because gin's form accessors drop parse errors.
func (h *handler) limitBody(c *gin.Context) {
	r := c.Request
	if r.Body == nil || r.Body == http.NoBody || isProxyPath(r.URL.Path) {
		c.Next()
		return
	}
	if r.ContentLength > MaxBodyBytes {
		// Not reading the rest: the connection is closed after the answer.
		c.Header("Connection", "close")
		h.fail(c, fmt.Errorf("%s %s: %w", r.Method, r.URL.Path, &http.MaxBytesError{Limit: MaxBodyBytes}))
		return
	}
	r.Body = http.MaxBytesReader(c.Writer, r.Body, MaxBodyBytes)
	var err error
	switch formType(r) {
	case "application/x-www-form-urlencoded":
		err = r.ParseForm()
	case "multipart/form-data":
		err = r.ParseMultipartForm(MaxBodyBytes)
	}
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		h.fail(c, fmt.Errorf("%s %s: read form: %w", r.Method, r.URL.Path, err))
		return
	}
	// Other form errors are the handler's to answer, as before.
	c.Next()
}

// formType is the media type of a request carrying an HTML form, else "".
func formType(r *http.Request) string {
	if r.Method != http.MethodPost && r.Method != http.MethodPut && r.Method != http.MethodPatch {
		return ""
	}
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil {
		return ""
	}
	return mt
}
