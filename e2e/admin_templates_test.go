package e2e

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gantry-dev/gantry/internal/devcluster/stacktest"
	"github.com/gantry-dev/gantry/internal/roster"
	"github.com/gantry-dev/gantry/internal/store"
)

// setText replaces a textarea's text at once (typing a whole file is slow).
func (b *Browser) setText(selector, value string) {
	b.t.Helper()
	b.do("set the text of "+selector, chromedp.SetValue(chromedp.CSS(selector), value))
}

func adminTemplateYAML(name, team, image string) string {
	return fmt.Sprintf(`name: %s
kind: training
title: E2E training %s
description: Made in the browser by an admin.
image: %s
teams: [%s]
gpuTypes:
  - {name: h100, label: "H100 80 GB SXM", pool: h100-sxm-ib-training, resource: nvidia.com/gpu}
command: [python]
simulateDuration: 20s
parameters:
  gpus: {min: 1, max: 2, default: 1}
  cpu: {min: "1", max: "8", default: "2"}
  memory: {min: 1Gi, max: 32Gi, default: 8Gi}
  durationMinutes: {min: 1, max: 60, default: 30}
  args: "train.py"
`, name, name, image, team)
}

// TestAdminPublishesATemplateForANewTeamAndAResearcherLaunchesIt: erin
// writes a template for a new team, previews it (first with an image off
// the allowlist, which blocks publishing), saves, publishes; alice, a
// member of that team, sees it and launches it.
func TestAdminPublishesATemplateForANewTeamAndAResearcherLaunchesIt(t *testing.T) {
	ctx := context.Background()
	dsn := stacktest.Postgres(t)
	portal := StartPortal(t, WithDatabase(dsn))
	team := portal.Stack.Team(t, stacktest.TeamSpec{
		MemberGroups: []string{"vision-researchers"}, LeadGroups: []string{"vision-leads"},
		Quotas: map[string]corev1.ResourceList{"h100-sxm-ib-training": {
			"nvidia.com/gpu": resource.MustParse("2"), "cpu": resource.MustParse("16"), "memory": resource.MustParse("64Gi")}},
	})
	db, err := store.Open(ctx, dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	require.NoError(t, store.Migrate(ctx, db.SQL(), slog.New(slog.NewTextHandler(io.Discard, nil))))
	require.NoError(t, db.UpsertTeams(ctx, []roster.Team{{Name: team.Name, DisplayName: team.DisplayName, CostCenter: team.CostCenter,
		MemberGroups: team.MemberGroups, LeadGroups: team.LeadGroups}}))
	name := "e2e-" + team.Name

	erin := NewBrowser(t, portal)
	erin.LoginAs("erin")
	erin.Open("/admin/templates")
	erin.Submit(testID("new-template"))
	erin.setText(testID("template-spec"), adminTemplateYAML(name, team.Name, "ghcr.io/someone/trainer:1.0"))
	erin.Submit(testID("template-preview"))
	assert.Contains(t, erin.TestIDText("violations"), "is not from an allowed registry", "the preview names the violation in words")
	assert.Contains(t, erin.TestIDText("preview-yaml"), "kind: Job")
	assert.Contains(t, erin.TestIDText("schema-teams"), team.Name)

	erin.setText(testID("template-spec"), adminTemplateYAML(name, team.Name, "nvcr.io/nvidia/pytorch:24.12-py3"))
	erin.Submit(testID("template-preview"))
	assert.Contains(t, erin.TestIDText("no-violations"), "No policy violations")
	assert.Contains(t, erin.TestIDText("preview-yaml"), "gantry.dev/team: "+team.Name)
	assert.Contains(t, erin.Text(testID("schema-params")), "GPUs per pod")
	assert.Contains(t, erin.Text(testID("schema-gpus")), "h100-sxm-ib-training")

	erin.Submit(testID("template-save"))
	assert.Equal(t, "/admin/templates/"+name+"?version=1", erin.Path())
	assert.Contains(t, erin.TestIDText("flash"), "draft version 1")
	assert.Equal(t, "draft", erin.TestIDText("template-status"))

	alice := NewBrowser(t, portal)
	alice.LoginAs("alice")
	alice.Open("/launch")
	assert.False(t, alice.HasTestID("template-"+name), "a draft is not offered")

	erin.Submit(testID("template-publish"))
	assert.Contains(t, erin.TestIDText("flash"), "Published version 1")
	assert.Equal(t, "published", erin.TestIDText("template-status"))

	alice.Open("/launch")
	require.True(t, alice.HasTestID("template-"+name), "the published template is offered to the team's researchers")
	alice.Open("/launch/" + name + "?team=" + team.Name)
	alice.Submit(testID("launch-submit"))
	prefix := "/teams/" + team.Name + "/jobs/" + name + "-"
	require.True(t, strings.HasPrefix(alice.Path(), prefix), "lands on the job page, at %s", alice.Path())
	job := strings.TrimPrefix(alice.Path(), "/teams/"+team.Name+"/jobs/")
	t.Cleanup(func() {
		alice.Open("/teams/" + team.Name + "/jobs/" + job)
		if alice.HasTestID("delete") {
			alice.Submit(testID("delete"))
		}
	})
	waitForPhase(t, alice, "running")

	erin.Open("/admin/audit")
	for _, action := range []string{"template.save", "template.publish", "job.launch"} {
		assert.True(t, erin.exists(`tr[data-action="`+action+`"]`), "the audit log has %s", action)
	}
}

// TestAdminVersionsDiffDuplicateRetirePricesAndAllowlist walks the rest of
// the admin's catalog pages without JavaScript-dependent steps.
func TestAdminVersionsDiffDuplicateRetirePricesAndAllowlist(t *testing.T) {
	portal := StartPortal(t)
	erin := NewBrowser(t, portal)
	erin.LoginAs("erin")
	name, copyName := "e2e-import", "e2e-copy"

	erin.Open("/admin/templates")
	erin.setText(testID("import-yaml"), "name: [")
	erin.Submit(testID("import-submit"))
	assert.Contains(t, erin.TestIDText("import-problems"), "The YAML is not a template file")
	erin.setText(testID("import-yaml"), adminTemplateYAML(name, "vision", "nvcr.io/nvidia/pytorch:24.12-py3"))
	erin.Submit(testID("import-submit"))
	assert.Contains(t, erin.TestIDText("flash"), "Imported as drafts: "+name+" v1")

	erin.Open("/admin/templates/" + name)
	spec := strings.Replace(erin.Value(testID("template-spec")), "Made in the browser by an admin.", "Second edition.", 1)
	erin.setText(testID("template-spec"), spec)
	erin.Submit(testID("template-save"))
	assert.Contains(t, erin.TestIDText("flash"), "draft version 2")
	erin.Submit(testID("diff-submit"))
	assert.Equal(t, "+description: Second edition.", erin.Text(testID("diff")+" .diff-add"))
	assert.Equal(t, "-description: Made in the browser by an admin.", erin.Text(testID("diff")+" .diff-del"))

	erin.Open("/admin/templates/" + name)
	erin.Fill(testID("duplicate-name"), copyName)
	erin.Submit(testID("duplicate-submit"))
	assert.Equal(t, "/admin/templates/"+copyName, erin.Path())
	assert.Equal(t, "draft", erin.TestIDText("template-status"))

	erin.Open("/admin/templates/" + name)
	erin.Submit(testID("template-retire"))
	assert.Contains(t, erin.TestIDText("flash"), "Retired "+name)
	assert.True(t, erin.HasTestID("retired"))

	erin.Open("/admin/prices")
	erin.choose("#field-flavor", "h100-sxm-ib-training|nvidia.com/gpu")
	erin.Fill(testID("price-usd"), "4.25")
	erin.setText(testID("price-from"), "2099-01-01")
	erin.Submit(testID("price-submit"))
	assert.Contains(t, erin.TestIDText("flash"), "4.25 USD per GPU-hour from 2099-01-01")
	assert.Contains(t, erin.Text(testID("price-h100-sxm-ib-training-future")), "4.25")
	erin.setText(testID("price-from"), "2001-01-01")
	erin.Submit(testID("price-submit"))
	assert.Contains(t, erin.TestIDText("price-problems"), "cannot be in the past")

	erin.Open("/admin/allowlist")
	assert.Contains(t, erin.Value(testID("allowlist-registries")), "nvcr.io", "seeded from configuration on first start")
	erin.setText(testID("allowlist-registries"), "https://nvcr.io\n")
	erin.Submit(testID("allowlist-submit"))
	assert.Contains(t, erin.TestIDText("allowlist-problems"), "is not a registry")
	erin.setText(testID("allowlist-registries"), "nvcr.io\nregistry.example.com/ml\n")
	erin.Submit(testID("allowlist-submit"))
	assert.Contains(t, erin.TestIDText("flash"), "2 registries")

	erin.Open("/admin/audit")
	for _, action := range []string{"template.import", "template.save", "template.duplicate", "template.retire", "price.set", "allowlist.update"} {
		assert.True(t, erin.exists(`tr[data-action="`+action+`"]`), "the audit log has %s", action)
	}

	alice := NewBrowser(t, portal)
	alice.LoginAs("alice")
	alice.Open("/admin/templates")
	assert.Contains(t, alice.TestIDText("error-page"), "Only Gantry admins", "researchers cannot manage templates")
}
