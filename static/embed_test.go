package static

import (
	"io/fs"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFSServesAssetsWithoutExternalReferences(t *testing.T) {
	cases := map[string]struct{ path string }{
		"stylesheet": {path: "css/gantry.css"},
		"icon":       {path: "favicon.svg"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			b, err := fs.ReadFile(FS, tc.path)
			require.NoError(t, err)
			assert.NotEmpty(t, b)
			body := strings.ReplaceAll(string(b), "http://www.w3.org/2000/svg", "")
			assert.NotContains(t, body, "http://")
			assert.NotContains(t, body, "https://")
			assert.NotContains(t, body, "@import")
		})
	}
}
