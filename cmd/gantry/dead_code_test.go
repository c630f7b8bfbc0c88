package main

import (
	"bufio"
	"bytes"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gantry-dev/gantry/internal/devcluster"
)

// TestPortalBinaryKeepsDeadCodeElimination links the portal as the Makefile,
// the container image and the local stack build it, with the linker
// printing what it keeps and why, and fails when a function in it calls
// reflect's Method or MethodByName with a name known only at run time. One
// such call anywhere makes the linker keep every exported method of every
// type that reaches an interface: every API group client-go registers, the
// validator's and gorm's whole surface. That was 78 MB of mapped code and
// tables against 46 MB without (gorm v1.31.2's hook lookup and gin's JSON
// binding through go-playground/validator), and most of it is resident: the
// executable's pages were 59-71 MiB of the portal's RSS at 10,000 workloads.
// The failure names the chain from main to the call, to say what to change.
func TestPortalBinaryKeepsDeadCodeElimination(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	args := devcluster.PortalBuildArgs(filepath.Join(t.TempDir(), "gantry"))
	require.Equal(t, "build", args[0])
	args = slices.Insert(args, 1, "-ldflags=-dumpdep")
	cmd := exec.CommandContext(t.Context(), "go", args...)
	cmd.Dir = root
	var deps bytes.Buffer
	cmd.Stderr = &deps
	require.NoError(t, cmd.Run(), "go %s", strings.Join(args, " "))

	// Each line is "from -> to", the first one naming to being the edge the
	// linker reached it by; a function calling Method or MethodByName with a
	// variable is marked <ReflectMethod>.
	reachedFrom := map[string]string{}
	var offenders []string
	sc := bufio.NewScanner(&deps)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		rawFrom, rawTo, ok := strings.Cut(sc.Text(), " -> ")
		if !ok {
			continue
		}
		from, to := symbolName(rawFrom), symbolName(rawTo)
		if _, seen := reachedFrom[to]; !seen {
			reachedFrom[to] = from
		}
		for _, raw := range []string{rawFrom, rawTo} {
			fn := symbolName(raw)
			if strings.Contains(raw, "<ReflectMethod>") && !strings.HasPrefix(fn, "reflect.") && !slices.Contains(offenders, fn) {
				offenders = append(offenders, fn)
			}
		}
	}
	require.NoError(t, sc.Err())
	require.Contains(t, reachedFrom, "main.main", "the linker's -dumpdep printed no edges: %.500s", deps.String())

	if len(offenders) == 0 {
		return
	}
	// A type's own Method wrapper around reflect.Value (a JSON library's,
	// say) is reached only once every method is kept: list the callers
	// that turned that on first.
	slices.SortStableFunc(offenders, func(a, b string) int {
		return boolOrder(isMethodWrapper(a)) - boolOrder(isMethodWrapper(b))
	})
	var why []string
	for _, fn := range offenders[:min(3, len(offenders))] {
		chain := []string{fn}
		for at := fn; len(chain) < 40; {
			parent, ok := reachedFrom[at]
			if !ok || parent == "_" {
				break
			}
			chain = append(chain, parent)
			if parent == "main.main" {
				break
			}
			at = parent
		}
		slices.Reverse(chain)
		why = append(why, strings.Join(chain, "\n    → "))
	}
	t.Fatalf("%d functions call reflect's Method or MethodByName with a name known only at run time, so the linker keeps every exported method in the portal; the first reached from main by:\n  %s",
		len(offenders), strings.Join(why, "\n\n  "))
}

func isMethodWrapper(fn string) bool {
	return strings.HasSuffix(fn, ".Method") || strings.HasSuffix(fn, ".MethodByName")
}

func boolOrder(b bool) int {
	if b {
		return 1
	}
	return 0
}

// symbolName is a -dumpdep symbol without the attributes the linker prints
// after it.
func symbolName(s string) string {
	name, _, _ := strings.Cut(strings.TrimSpace(s), " <")
	return name
}
