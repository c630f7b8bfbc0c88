package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const module = "github.com/gantry-dev/gantry/"

// knownWrongEdges are imports that break the house rules today and are
// being taken out (issue 18); a new one fails the test, and so does one of
// these once it is gone (delete it here then).
var knownWrongEdges = map[string]string{}

// TestHousePointsOneWay reads the non-test imports of every package of the
// module and fails on an edge against the dependency rule: cmd → web →
// domain → store/kube, views imported by web only, nothing imports web,
// store and kube below every domain package, the base packages (names,
// money, identity, error kinds, the team record, server timing) leaves, and
// no util/common/helpers package.
func TestHousePointsOneWay(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, module+"...").Output()
	require.NoError(t, err, "go list")
	// base packages hold vocabulary and values every layer may use, and the
	// request's Server-Timing that the store, kube and gpu clients add to.
	base := []string{"internal/naming", "internal/money", "internal/identity", "internal/problem", "internal/roster", "internal/servertiming"}
	var wrong []string
	seen := map[string]bool{}
	for line := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		from := strings.TrimPrefix(fields[0], module)
		for _, seg := range strings.Split(from, "/") {
			if seg == "util" || seg == "utils" || seg == "common" || seg == "helpers" {
				wrong = append(wrong, from+": a grab-bag package name")
			}
		}
		for _, imp := range fields[1:] {
			to, ok := strings.CutPrefix(imp, module)
			if !ok {
				continue
			}
			edge := from + " -> " + to
			if why := wrongEdge(from, to, base); why != "" {
				if _, known := knownWrongEdges[edge]; known {
					seen[edge] = true
					continue
				}
				wrong = append(wrong, edge+": "+why)
			}
		}
	}
	for edge := range knownWrongEdges {
		if !seen[edge] {
			wrong = append(wrong, edge+": gone — remove it from knownWrongEdges")
		}
	}
	slices.Sort(wrong)
	require.Empty(t, wrong, "imports against the dependency rule")
}

// wrongEdge says why from may not import to, or "" when it may.
func wrongEdge(from, to string, base []string) string {
	under := func(p, root string) bool { return p == root || strings.HasPrefix(p, root+"/") }
	isCmd := under(from, "cmd")
	switch {
	case under(to, "cmd"):
		return "nothing imports a command"
	case under(to, "internal/web") && !isCmd:
		return "nothing but cmd imports web"
	case under(to, "views") && !isCmd && !under(from, "internal/web"):
		return "views are imported by web only"
	case slices.Contains(base, from):
		return "a base package imports no other Gantry package"
	case under(from, "internal/store") && to == "migrations":
		return ""
	case (under(from, "internal/store") || under(from, "internal/kube")) && !slices.Contains(base, to) &&
		!under(to, from):
		return "store and kube sit below the domain: they import base packages only"
	case under(to, "internal/devcluster") && !isCmd && !under(from, "internal/devcluster") && from != "e2e":
		return "the local stack is for commands and tests, not the portal"
	case under(from, "internal/policy") && under(to, "internal/catalog"), under(from, "internal/catalog") && under(to, "internal/policy") && !under(from, "internal/catalog/catalogadmin"):
		return "policy and catalog share a small vocabulary, not each other"
	case from == "views" && !slices.Contains(base, to):
		return "views take typed props, they import base packages only"
	}
	return ""
}

func TestWrongEdgeNamesTheRule(t *testing.T) {
	base := []string{"internal/naming", "internal/money", "internal/identity", "internal/problem", "internal/roster"}
	cases := map[string]struct {
		from, to string
		wrong    bool
	}{
		"domain imports web":        {from: "internal/launch", to: "internal/web", wrong: true},
		"cmd imports web":           {from: "cmd/gantry", to: "internal/web"},
		"web imports views":         {from: "internal/web", to: "views"},
		"domain imports views":      {from: "internal/queue", to: "views", wrong: true},
		"kube imports domain":       {from: "internal/kube", to: "internal/catalog", wrong: true},
		"store imports migrations":  {from: "internal/store", to: "migrations"},
		"naming imports kube":       {from: "internal/naming", to: "internal/kube", wrong: true},
		"policy imports catalog":    {from: "internal/policy", to: "internal/catalog", wrong: true},
		"portal imports dev stack":  {from: "internal/launch", to: "internal/devcluster", wrong: true},
		"e2e imports the dev stack": {from: "e2e", to: "internal/devcluster/stacktest"},
		"domain imports store":      {from: "internal/quota", to: "internal/store"},
		"domain imports naming":     {from: "internal/teams", to: "internal/naming"},
		"kube imports problem":      {from: "internal/kube", to: "internal/problem"},
		"problem imports store":     {from: "internal/problem", to: "internal/store", wrong: true},
		"store imports the record":  {from: "internal/store", to: "internal/roster"},
		"record imports naming":     {from: "internal/roster", to: "internal/naming", wrong: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			why := wrongEdge(tc.from, tc.to, base)
			require.Equal(t, tc.wrong, why != "", "%s -> %s: %q", tc.from, tc.to, why)
		})
	}
}
