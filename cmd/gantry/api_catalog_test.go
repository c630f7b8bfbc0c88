package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type apiTplVersion struct {
	Name    string `json:"name"`
	Version int    `json:"version"`
	Title   string `json:"title"`
	Status  string `json:"status"`
	YAML    string `json:"yaml"`
}

// TestCatalogAdminThroughAPI: what an admin does on the template, price
// and allowlist pages, done by a script with a token, and seen by a
// researcher's script the way the launch page sees it.
func TestCatalogAdminThroughAPI(t *testing.T) {
	p := startTestPortal(t, "--seed-templates", repoFile(t, "deploy/templates"))
	spec := fetchSpec(t, p.URL)
	as := func(who string) apiClient {
		u := p.signIn(t, who)
		return apiClient{t: t, u: p.withToken(t, who, apiToken(t, u, u.csrf())), spec: spec}
	}
	erin, alice := as("erin"), as("alice")

	// Templates: read the newest version, import a new title as a draft,
	// compare, publish; researchers then launch the new version.
	var versions struct{ Versions []apiTplVersion }
	require.Equal(t, http.StatusOK, erin.call(http.MethodGet, "/api/v1/templates/pytorch-train/versions", "", &versions))
	require.NotEmpty(t, versions.Versions)
	var latest apiTplVersion
	require.Equal(t, http.StatusOK, erin.call(http.MethodGet, "/api/v1/templates/pytorch-train/versions/latest", "", &latest))
	assert.Equal(t, "published", latest.Status)
	require.Contains(t, latest.YAML, "title: "+latest.Title)

	var e apiErr
	require.Equal(t, http.StatusUnprocessableEntity, erin.call(http.MethodPost, "/api/v1/templates/import", `{"yaml":"not: a template"}`, &e))
	assert.Equal(t, "invalid", e.Code)
	edited := strings.Replace(latest.YAML, "title: "+latest.Title, "title: PyTorch training, scripted", 1)
	body, err := json.Marshal(map[string]string{"yaml": edited})
	require.NoError(t, err)
	var imported struct{ Versions []apiTplVersion }
	require.Equal(t, http.StatusCreated, erin.call(http.MethodPost, "/api/v1/templates/import", string(body), &imported))
	require.Len(t, imported.Versions, 1)
	draft := imported.Versions[0]
	assert.Equal(t, latest.Version+1, draft.Version)
	assert.Equal(t, "draft", draft.Status)

	var diff struct{ Diff string }
	require.Equal(t, http.StatusOK, erin.call(http.MethodGet, fmt.Sprintf("/api/v1/templates/pytorch-train/diff?from=%d&to=%d", latest.Version, draft.Version), "", &diff))
	assert.Contains(t, diff.Diff, "-title: "+latest.Title)
	assert.Contains(t, diff.Diff, "+title: PyTorch training, scripted")

	assert.Equal(t, http.StatusForbidden, alice.call(http.MethodPost, "/api/v1/templates/pytorch-train/publish", fmt.Sprintf(`{"version":%d}`, draft.Version), nil),
		"researchers do not publish")
	var published apiTplVersion
	require.Equal(t, http.StatusOK, erin.call(http.MethodPost, "/api/v1/templates/pytorch-train/publish", fmt.Sprintf(`{"version":%d}`, draft.Version), &published))
	assert.Equal(t, "published", published.Status)
	assert.Equal(t, map[string]string{"pytorch-train": "PyTorch training, scripted"}, pick(launchable(t, alice), "pytorch-train"),
		"researchers launch the published version")

	// Preview says what policy would refuse, without saving anything.
	var preview struct {
		Name       string   `json:"name"`
		Rendered   string   `json:"rendered"`
		Violations []string `json:"violations"`
	}
	body, err = json.Marshal(map[string]string{"yaml": edited})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, erin.call(http.MethodPost, "/api/v1/templates/preview", string(body), &preview))
	assert.Equal(t, "pytorch-train", preview.Name)
	assert.Contains(t, preview.Rendered, "kind: Job")
	assert.Empty(t, preview.Violations)
	foreign := regexp.MustCompile(`(?m)^image: .*$`).ReplaceAllString(edited, "image: registry.nowhere.example/train:1")
	body, err = json.Marshal(map[string]string{"yaml": foreign})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, erin.call(http.MethodPost, "/api/v1/templates/preview", string(body), &preview))
	require.NotEmpty(t, preview.Violations, "an image from a registry not on the allowlist")
	assert.Contains(t, strings.Join(preview.Violations, " "), "registry.nowhere.example")

	// Duplicate: a new template starts as a draft of its own.
	var copied apiTplVersion
	require.Equal(t, http.StatusCreated, erin.call(http.MethodPost, "/api/v1/templates/pytorch-train/duplicate", `{"newName":"pytorch-train-copy"}`, &copied))
	assert.Equal(t, apiTplVersion{Name: "pytorch-train-copy", Version: 1, Title: "PyTorch training, scripted", Status: "draft"}, copied)
	var adminList struct {
		Templates []struct {
			apiTplVersion
			PublishedVersion int `json:"publishedVersion"`
		}
	}
	require.Equal(t, http.StatusOK, erin.call(http.MethodGet, "/api/v1/admin/templates", "", &adminList))
	listed := map[string]string{}
	for _, tpl := range adminList.Templates {
		listed[tpl.Name] = fmt.Sprintf("v%d %s, launched v%d", tpl.Version, tpl.Status, tpl.PublishedVersion)
	}
	assert.Equal(t, map[string]string{
		"pytorch-train":      fmt.Sprintf("v%d published, launched v%d", draft.Version, draft.Version),
		"pytorch-train-copy": "v1 draft, launched v0",
	}, pick(listed, "pytorch-train", "pytorch-train-copy"))

	require.Equal(t, http.StatusNoContent, erin.call(http.MethodPost, "/api/v1/templates/pytorch-train/retire", "", nil))
	assert.NotContains(t, launchable(t, alice), "pytorch-train", "a retired template is not offered")
	assert.Contains(t, launchable(t, alice), "jupyter-pytorch", "the others still are")

	// Prices: a future price is stored exactly and listed as future.
	tomorrow := time.Now().UTC().AddDate(0, 0, 1).Format(time.DateOnly)
	e = apiErr{}
	require.Equal(t, http.StatusUnprocessableEntity, erin.call(http.MethodPost, "/api/v1/prices",
		fmt.Sprintf(`{"flavor":%q,"resource":%q,"usdPerHour":"-1","effectiveFrom":%q}`, e2eFlavor, e2eGPU, tomorrow), &e))
	assert.NotEmpty(t, e.Message)
	require.Equal(t, http.StatusCreated, erin.call(http.MethodPost, "/api/v1/prices",
		fmt.Sprintf(`{"flavor":%q,"resource":%q,"usdPerHour":"3.1415","effectiveFrom":%q}`, e2eFlavor, e2eGPU, tomorrow), nil))
	var prices struct {
		Prices []struct {
			Flavor, Resource, State string
			USDPerHour              string    `json:"usdPerHour"`
			EffectiveFrom           time.Time `json:"effectiveFrom"`
			SetBy                   string    `json:"setBy"`
		}
	}
	require.Equal(t, http.StatusOK, erin.call(http.MethodGet, "/api/v1/prices", "", &prices))
	var future []string
	for _, pr := range prices.Prices {
		if pr.Flavor == e2eFlavor && pr.Resource == e2eGPU && pr.State == "future" {
			future = append(future, pr.USDPerHour+" from "+pr.EffectiveFrom.UTC().Format(time.DateOnly)+" by "+pr.SetBy)
		}
	}
	assert.Equal(t, []string{"3.141500 from " + tomorrow + " by erin"}, future)
	assert.Equal(t, http.StatusForbidden, alice.call(http.MethodGet, "/api/v1/prices", "", nil))

	// The image allowlist: add a registry; the next read has it.
	var allow struct {
		Registries   []string `json:"registries"`
		ClusterError string   `json:"clusterError"`
	}
	require.Equal(t, http.StatusOK, erin.call(http.MethodGet, "/api/v1/allowlist", "", &allow))
	require.NotEmpty(t, allow.Registries)
	want := append(slices.Clone(allow.Registries), "registry.scripted.example")
	body, err = json.Marshal(map[string][]string{"registries": want})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, erin.call(http.MethodPut, "/api/v1/allowlist", string(body), &allow))
	assert.Empty(t, allow.ClusterError, "the cluster's copy was updated too")
	require.Equal(t, http.StatusOK, erin.call(http.MethodGet, "/api/v1/allowlist", "", &allow))
	assert.Contains(t, allow.Registries, "registry.scripted.example")
	var refused struct {
		Code     string   `json:"code"`
		Problems []string `json:"problems"`
	}
	require.Equal(t, http.StatusUnprocessableEntity, erin.call(http.MethodPut, "/api/v1/allowlist", `{"registries":["https://nvcr.io"]}`, &refused))
	assert.Equal(t, "invalid", refused.Code)
	require.Len(t, refused.Problems, 1)
	assert.Contains(t, refused.Problems[0], "without https://")
	require.Equal(t, http.StatusOK, erin.call(http.MethodGet, "/api/v1/allowlist", "", &allow))
	assert.Equal(t, want, allow.Registries, "a refused list changes nothing")

	// Every step is in the audit log, by erin.
	var audit struct {
		Entries []struct{ Actor, Action string }
	}
	require.Equal(t, http.StatusOK, erin.call(http.MethodGet, "/api/v1/audit?actor=erin&limit=100", "", &audit))
	var actions []string
	for _, en := range audit.Entries {
		actions = append(actions, en.Action)
	}
	for _, a := range []string{"template.import", "template.publish", "template.retire", "price.set", "allowlist.update"} {
		assert.Contains(t, actions, a)
	}
}

// launchable is the templates a user's script may launch, by name with title.
func launchable(t *testing.T, a apiClient) map[string]string {
	t.Helper()
	var list struct {
		Templates []struct {
			Name  string `json:"name"`
			Title string `json:"title"`
		} `json:"templates"`
	}
	require.Equal(t, http.StatusOK, a.call(http.MethodGet, "/api/v1/templates", "", &list))
	out := map[string]string{}
	for _, tpl := range list.Templates {
		out[tpl.Name] = tpl.Title
	}
	return out
}
