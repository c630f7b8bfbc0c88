package web

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/problem"
)

// apiBadBody answers a body that is not the JSON the route expects, saying
// what to send; a body over the size limit gets its own answer.
func (h *handler) apiBadBody(c *gin.Context, err error, hint string) {
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		h.fail(c, fmt.Errorf("api body: %w", err))
		return
	}
	c.AbortWithStatusJSON(http.StatusBadRequest, apiErrorBody{Error: "Bad request", Code: "bad_request", Message: hint, RequestID: requestIDOf(c)})
}

// apiErrorBody is the API's one error shape; Fields names the inputs to
// correct when the request was refused for its content.
type apiErrorBody struct {
	Error     string            `json:"error"`
	Code      string            `json:"code"`
	Message   string            `json:"message"`
	RequestID string            `json:"request_id"`
	Fields    map[string]string `json:"fields,omitempty"`
	Problems  []string          `json:"problems,omitempty"`
}

// apiFail answers err in the API's error shape, with the fields or
// problems of a validation error; every other error goes to fail.
func (h *handler) apiFail(c *gin.Context, err error) {
	var withFields problem.FieldErrors
	var withItems problem.ItemErrors
	out := apiErrorBody{RequestID: requestIDOf(c)}
	switch {
	case errors.As(err, &withFields):
		out.Fields = withFields.InvalidFields()
	case errors.As(err, &withItems):
		out.Problems = withItems.InvalidItems()
	default:
		h.fail(c, err)
		return
	}
	p := describe(err)
	h.Log.WarnContext(c.Request.Context(), "request refused", "status", p.Status, "path", c.Request.URL.Path, "request_id", out.RequestID, "err", err)
	out.Error, out.Code, out.Message = p.Title, apiCode(err, p.Status), p.Message
	c.AbortWithStatusJSON(p.Status, out)
}

// apiInvalid answers input the handler itself found wrong (a number or a
// date that does not read), keyed by field, before any service is called.
func (h *handler) apiInvalid(c *gin.Context, fields map[string]string) {
	msgs := make([]string, 0, len(fields))
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		msgs = append(msgs, fields[k])
	}
	c.AbortWithStatusJSON(http.StatusUnprocessableEntity, apiErrorBody{Error: "Check your input", Code: apiCode(nil, http.StatusUnprocessableEntity),
		Message: strings.Join(msgs, " "), RequestID: requestIDOf(c), Fields: fields})
}
