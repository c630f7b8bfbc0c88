package web

import (
	"encoding/json"
	"fmt"

	"github.com/gin-gonic/gin"
)

// bindJSON decodes the request's JSON body into v. The API's bodies carry
// no validation tags, so it decodes with encoding/json rather than gin's
// ShouldBindJSON: that one runs go-playground/validator, whose "validateFn"
// rule calls reflect's MethodByName with a name known only at run time,
// and one such call anywhere in the binary turns off the linker's removal
// of unused methods for the whole portal (about 30 MB of its mapped code
// and tables, most of it resident; see TestPortalBinaryKeepsDeadCodeElimination).
func bindJSON(c *gin.Context, v any) error {
	if err := json.NewDecoder(c.Request.Body).Decode(v); err != nil {
		return fmt.Errorf("decode the request's JSON body: %w", err)
	}
	return nil
}
