package naming

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/util/validation"
)

func TestOwnerLabel(t *testing.T) {
	cases := map[string]struct {
		in         string
		wantPrefix string
		wantExact  bool
	}{
		"plain username kept":              {in: "alice", wantPrefix: "alice", wantExact: true},
		"email sanitised with a hash":      {in: "Alice.Smith@corp.example", wantPrefix: "alice.smith-corp.example-"},
		"only symbols become a hash":       {in: "@@@", wantPrefix: "u"},
		"long names are cut to 63":         {in: strings.Repeat("x", 70), wantPrefix: strings.Repeat("x", 54) + "-"},
		"uppercase is a valid label value": {in: "Bob", wantPrefix: "Bob", wantExact: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := OwnerLabel(tc.in)
			if tc.wantExact {
				assert.Equal(t, tc.wantPrefix, got)
			} else {
				assert.True(t, strings.HasPrefix(got, tc.wantPrefix), "%q has prefix %q", got, tc.wantPrefix)
			}
			assert.Empty(t, validation.IsValidLabelValue(got), "valid label value")
			assert.Equal(t, got, OwnerLabel(tc.in), "deterministic")
		})
	}
	assert.NotEqual(t, OwnerLabel("Bob"), OwnerLabel("bob!"), "different users stay different")
}
