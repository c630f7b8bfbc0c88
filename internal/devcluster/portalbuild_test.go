package devcluster

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPortalBuildLeavesOutMessagePack: the portal as make run, the e2e
// tests, make build and the container image build it links no
// MessagePack codec.
func TestPortalBuildLeavesOutMessagePack(t *testing.T) {
	args := PortalBuildArgs("gantry")
	i := slices.Index(args, "-tags")
	require.GreaterOrEqual(t, i, 0, "PortalBuildArgs sets build tags")
	tags := args[i+1]
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	cmd := exec.Command("go", "list", "-deps", "-tags", tags, "./cmd/gantry")
	cmd.Dir = root
	out, err := cmd.Output()
	require.NoError(t, err, "go list -deps ./cmd/gantry")
	deps := strings.Fields(string(out))
	assert.Contains(t, deps, "github.com/gin-gonic/gin/binding")
	assert.NotContains(t, deps, "github.com/ugorji/go/codec", "the MessagePack codec is linked")
	for _, f := range []string{"Makefile", filepath.Join("deploy", "Containerfile")} {
		b, err := os.ReadFile(filepath.Join(root, f))
		require.NoError(t, err)
		assert.Contains(t, string(b), "-tags "+tags+" ", "%s builds gantry with the same tags", f)
	}
}
