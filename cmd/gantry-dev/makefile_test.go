package main

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMakeRunEndsInTheBuiltGantryDev: Ctrl-C in `make run` must end with
// status 0 and no "make: *** [run] Error 1". gantry-dev exits 0 once it has
// stopped what it started, but `go run` exits 1 after an interrupt whatever
// the program it ran returned, so the recipe's last command must be the
// built binary itself (as `make -n run` prints it).
func TestMakeRunEndsInTheBuiltGantryDev(t *testing.T) {
	out, err := exec.CommandContext(t.Context(), "make", "-s", "-n", "-C", "../..", "run").CombinedOutput()
	require.NoError(t, err, "make -n run: %s", out)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	last := lines[len(lines)-1]
	assert.Equal(t, "exec .local/bin/gantry-dev run", last, "the run recipe ends in the built gantry-dev")
	assert.NotContains(t, string(out), "go run ./cmd/gantry-dev run", "no `go run` between make and gantry-dev")
}
