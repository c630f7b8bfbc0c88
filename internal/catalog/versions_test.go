package catalog_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gantry-dev/gantry/internal/catalog"
)

func TestFileYAMLKeepsFieldOrderAndParsesBack(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "deploy", "templates", "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			require.NoError(t, err)
			orig, err := catalog.Parse(data)
			require.NoError(t, err)
			out, err := catalog.FileYAML(orig)
			require.NoError(t, err)
			assert.True(t, strings.HasPrefix(string(out), "name: "+orig.Name+"\nkind: "), "name and kind come first:\n%s", out)
			back, err := catalog.Parse(out)
			require.NoError(t, err)
			assert.Equal(t, orig, back)
			again, err := catalog.FileYAML(back)
			require.NoError(t, err)
			assert.Equal(t, string(out), string(again))
		})
	}
}

func TestDiffShowsChangedLinesOnly(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "deploy", "templates", "pytorch-train.yaml"))
	require.NoError(t, err)
	v1, err := catalog.Parse(data)
	require.NoError(t, err)
	v1.Version = 1
	v2 := v1
	v2.Version = 2
	v2.Image = "nvcr.io/nvidia/pytorch:25.01-py3"
	cases := map[string]struct {
		from, to catalog.Template
		want     []string
	}{
		"same content": {v1, v1, nil},
		"new image":    {v1, v2, []string{"--- pytorch-train v1", "+++ pytorch-train v2", "-image: nvcr.io/nvidia/pytorch:24.12-py3", "+image: nvcr.io/nvidia/pytorch:25.01-py3"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			diff, err := catalog.Diff(tc.from, tc.to)
			require.NoError(t, err)
			var changed []string
			for line := range strings.Lines(diff) {
				line = strings.TrimRight(line, "\n")
				if strings.HasPrefix(line, "+") || strings.HasPrefix(line, "-") {
					changed = append(changed, strings.TrimSpace(line))
				}
			}
			assert.Equal(t, tc.want, changed)
		})
	}
}
