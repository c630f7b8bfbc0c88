package main

import (
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type apiJobPage struct {
	Jobs []struct {
		Name, Team, Owner, Kind, Phase, Template string
	} `json:"jobs"`
	Total int    `json:"total"`
	Page  int    `json:"page"`
	Pages int    `json:"pages"`
	Next  string `json:"next"`
}

// TestTeamJobListThroughAPI: a script lists its team's jobs as the jobs
// page does, filtered to its own and paged, and another team's are hidden.
func TestTeamJobListThroughAPI(t *testing.T) {
	p := startTestPortal(t, "--seed-templates", repoFile(t, "deploy/templates"))
	spec := fetchSpec(t, p.URL)
	as := func(who string) apiClient {
		u := p.signIn(t, who)
		return apiClient{t: t, u: p.withToken(t, who, apiToken(t, u, u.csrf())), spec: spec}
	}
	alice, bob, carol := as("alice"), as("bob"), as("carol")
	first := launchJob(t, alice.u, "vision")
	second := launchJob(t, alice.u, "vision")
	bobs := launchJob(t, bob.u, "vision")

	names := func(pg apiJobPage) []string {
		var out []string
		for _, j := range pg.Jobs {
			out = append(out, j.Name)
		}
		return out
	}
	var all apiJobPage
	require.Eventually(t, func() bool {
		all = apiJobPage{}
		alice.call(http.MethodGet, "/api/v1/teams/vision/jobs?perPage=500", "", &all)
		got := names(all)
		return slices.Contains(got, first.name) && slices.Contains(got, second.name) && slices.Contains(got, bobs.name)
	}, 30*time.Second, 200*time.Millisecond, "the three jobs are listed once the portal's cache has them")
	for _, j := range all.Jobs {
		if j.Name == bobs.name {
			assert.Equal(t, "bob", j.Owner)
			assert.Equal(t, "pytorch-train", j.Template)
			assert.Equal(t, "training", j.Kind)
			assert.NotEmpty(t, j.Phase)
		}
	}

	var mine apiJobPage
	require.Equal(t, http.StatusOK, bob.call(http.MethodGet, "/api/v1/teams/vision/jobs?mine=1&perPage=500", "", &mine))
	assert.Contains(t, names(mine), bobs.name)
	assert.NotContains(t, names(mine), first.name, "mine=1 keeps only the caller's jobs")

	// Paging: one job a page, following next, reaches every job once.
	var seen []string
	next := "/api/v1/teams/vision/jobs?perPage=1"
	for next != "" && len(seen) <= all.Total {
		var pg apiJobPage
		require.Equal(t, http.StatusOK, alice.call(http.MethodGet, next, "", &pg))
		require.Len(t, pg.Jobs, 1)
		seen = append(seen, pg.Jobs[0].Name)
		next = pg.Next
	}
	assert.Equal(t, names(all), seen, "paging one at a time gives the same jobs in the same order, each once")

	var e apiErr
	assert.Equal(t, http.StatusUnprocessableEntity, alice.call(http.MethodGet, "/api/v1/teams/vision/jobs?kind=spaceship", "", &e))
	assert.Contains(t, e.Fields["kind"], "training, notebook or inference")
	assert.Equal(t, http.StatusNotFound, carol.call(http.MethodGet, "/api/v1/teams/vision/jobs", "", nil), "another team's jobs are hidden")
}
