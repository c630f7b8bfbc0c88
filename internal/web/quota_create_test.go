package web

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/assert"

	"github.com/gantry-dev/gantry/views"
)

func TestParseQuotaForm(t *testing.T) {
	cases := map[string]struct {
		form      url.Values
		wantDelta int64
		wantUntil *time.Time
		wantErrs  []string
	}{
		"more GPUs until a date": {
			form:      url.Values{"team": {"vision"}, "delta": {"4"}, "until": {"2026-12-24"}, "reason": {"deadline"}},
			wantDelta: 4, wantUntil: quotaTestPtr(time.Date(2026, 12, 24, 0, 0, 0, 0, time.UTC)),
		},
		"fewer until revoked": {form: url.Values{"delta": {"-2"}}, wantDelta: -2},
		"not a number":        {form: url.Values{"delta": {"four"}}, wantErrs: []string{views.FieldQuotaDelta}},
		"not a date":          {form: url.Values{"delta": {"1"}, "until": {"24.12.2026"}}, wantErrs: []string{views.FieldQuotaUntil}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c, _ := gin.CreateTestContext(httptest.NewRecorder())
			c.Request = httptest.NewRequest(http.MethodPost, "/quota-requests", strings.NewReader(tc.form.Encode()))
			c.Request.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			in, form := parseQuotaForm(c)
			var gotErrs []string
			for k := range form.Errors {
				gotErrs = append(gotErrs, k)
			}
			assert.ElementsMatch(t, tc.wantErrs, gotErrs)
			if len(tc.wantErrs) == 0 {
				assert.Equal(t, tc.wantDelta, in.Delta)
				assert.Equal(t, tc.wantUntil, in.Until)
			}
		})
	}
}

func TestSplitGroups(t *testing.T) {
	assert.Equal(t, []string{"a-researchers", "b", "c"}, splitGroups(" a-researchers\r\n\nb, c "))
}

func quotaTestPtr[T any](v T) *T { return &v }
