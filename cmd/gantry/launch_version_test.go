package main

import (
	"context"
	"encoding/json"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gantry-dev/gantry/internal/launch"
	"github.com/gantry-dev/gantry/internal/store"
)

// templateDir is a folder holding deploy/templates/pytorch-train.yaml with
// its description replaced, so each call makes a new version.
func templateDir(t *testing.T, description string) string {
	t.Helper()
	raw, err := os.ReadFile(repoFile(t, "deploy/templates/pytorch-train.yaml"))
	require.NoError(t, err)
	const old = "description: A PyTorch training run on up to 8 GPUs of one node, with a time limit."
	require.Contains(t, string(raw), old)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "pytorch-train.yaml"),
		[]byte(strings.Replace(string(raw), old, "description: "+description, 1)), fs.FileMode(0o644)))
	return dir
}

func TestOnlyTheNewestPublishedVersionCanBeLaunched(t *testing.T) {
	p := startTestPortal(t, "--seed-templates", templateDir(t, "First version."))
	ctx := context.Background()
	db, err := store.Open(ctx, p.DSN)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	n, err := launch.SeedTemplates(ctx, db, templateDir(t, "Second version."))
	require.NoError(t, err)
	require.Equal(t, 1, n, "version 2 is published")

	carol := p.signIn(t, "carol")
	token := carol.csrf()

	status, body := carol.do(http.MethodPost, "/api/v1/teams/nlp/jobs", `{"template":"pytorch-train","version":1,"parameters":{"gpus":"1"}}`, token)
	require.Equal(t, http.StatusConflict, status, body)
	var apiErr struct{ Code, Message string }
	require.NoError(t, json.Unmarshal([]byte(body), &apiErr), body)
	assert.Equal(t, "template_version_outdated", apiErr.Code)
	assert.Equal(t, `Version 1 of the template "PyTorch training (one node)" has been replaced by version 2; only the newest published version can be launched. Launch version 2, or leave the version out.`, apiErr.Message)

	// Version 2 passes the version check and meets the parameter check.
	for _, version := range []string{`"version":2,`, ``} {
		status, body = carol.do(http.MethodPost, "/api/v1/teams/nlp/jobs", `{"template":"pytorch-train",`+version+`"parameters":{"gpus":"9"}}`, token)
		require.Equal(t, http.StatusUnprocessableEntity, status, body)
		assert.Contains(t, body, `"gpus":"This template allows the number of GPUs from 1 to 8; you asked for 9."`)
	}

	// The form launches the version it showed, and says so when it was replaced.
	status, body = carol.do(http.MethodPost, "/launch/pytorch-train", url.Values{"team": {"nlp"}, "version": {"1"}, "gpus": {"1"}, "launchId": {"oldform0001"}}, token)
	assert.Equal(t, http.StatusConflict, status)
	assert.Contains(t, body, "Version 1 of the template &#34;PyTorch training (one node)&#34; has been replaced by version 2")
	assert.Contains(t, body, `name="version" value="2"`, "the form shown again is the newest version")
}
