package e2e

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseStatReadsACommandWithSpacesAndItsCPUTime(t *testing.T) {
	got, err := parseStat("4242 (kube apiserver) S 1 4242 4242 0 -1 4194560 100 0 0 0 1234 567 0 0 20 0 12 0 100 0 0\n")
	require.NoError(t, err)
	assert.Equal(t, procTicks{name: "kube apiserver", ticks: 1234 + 567}, got)
	assert.Equal(t, 18010*time.Millisecond, got.cpu())

	_, err = parseStat("4242 (short) S 1 2")
	assert.Error(t, err, "a line without the CPU fields")

	procs, err := processCPU()
	require.NoError(t, err)
	assert.Equal(t, "e2e.test", procs[os.Getpid()].name, "this test's own process")
}
