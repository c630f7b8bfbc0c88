package launch_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gantry-dev/gantry/internal/audit"
	"github.com/gantry-dev/gantry/internal/catalog"
	"github.com/gantry-dev/gantry/internal/catalog/catalogadmin"
	"github.com/gantry-dev/gantry/internal/launch"
	"github.com/gantry-dev/gantry/internal/naming"
	"github.com/gantry-dev/gantry/internal/problem"
)

// adminOf returns the catalog admin over the fixture's database, with the
// fixture's registries as the stored allowlist.
func adminOf(t *testing.T, f fixture) *catalogadmin.Admin {
	t.Helper()
	_, err := f.db.SeedImageAllowlist(context.Background(), Registries, "test")
	require.NoError(t, err)
	return &catalogadmin.Admin{Store: f.db, Audit: audit.New(f.db, nil)}
}

// trainingTemplate is a copy of pytorch-train under a name of this test.
func trainingTemplate(t *testing.T, f fixture, name string) catalog.Template {
	t.Helper()
	base, err := f.svc.Template(context.Background(), "pytorch-train", 0)
	require.NoError(t, err)
	base.Name, base.Version, base.Teams = name, 0, []string{f.team.Name}
	return base
}

func TestTemplateAdminVersionsAndRetirementKeepRunningJobs(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	admin := adminOf(t, f)
	erin := catalogadmin.Actor{Username: "erin", Via: "test"}
	tpl := trainingTemplate(t, f, "train-admin")

	v1, created, err := admin.Save(ctx, erin, tpl)
	require.NoError(t, err)
	require.True(t, created)
	require.True(t, v1.Draft)
	req := launch.Request{Team: f.team.Name, Template: tpl.Name, Values: map[string]string{"gpus": "1", "cpu": "2", "memory": "8Gi"}}

	req.LaunchID = launch.NewLaunchID()
	_, err = f.svc.Launch(ctx, f.alice, req)
	require.Error(t, err, "a template with only a draft is not launchable")

	_, err = admin.Publish(ctx, erin, tpl.Name, v1.Version)
	require.NoError(t, err)
	req.LaunchID = launch.NewLaunchID()
	first, err := f.svc.Launch(ctx, f.alice, req)
	require.NoError(t, err)

	// A new version, published: the running job keeps version 1.
	tpl.Description = "Second version"
	v2, _, err := admin.Save(ctx, erin, tpl)
	require.NoError(t, err)
	require.Equal(t, 2, v2.Version)
	_, err = admin.Publish(ctx, erin, tpl.Name, v2.Version)
	require.NoError(t, err)
	rec, err := f.db.LaunchByName(ctx, first.Namespace, first.Name)
	require.NoError(t, err)
	assert.Equal(t, 1, rec.TemplateVersion, "the launch record keeps its version")
	var job *batchv1.Job
	require.Eventually(t, func() bool {
		job, err = f.env.Kube.BatchV1().Jobs(first.Namespace).Get(ctx, first.Name, metav1.GetOptions{})
		return err == nil
	}, 30*time.Second, 200*time.Millisecond)
	assert.Equal(t, "1", job.Labels[naming.LabelTemplateVersion], "the job keeps its version label")
	shown, err := f.svc.Template(ctx, rec.Template, rec.TemplateVersion)
	require.NoError(t, err)
	assert.Equal(t, 1, shown.Version)
	assert.NotEqual(t, "Second version", shown.Description, "the job page shows the version it was launched from")

	req.LaunchID = launch.NewLaunchID()
	second, err := f.svc.Launch(ctx, f.alice, req)
	require.NoError(t, err)
	rec2, err := f.db.LaunchByName(ctx, second.Namespace, second.Name)
	require.NoError(t, err)
	assert.Equal(t, 2, rec2.TemplateVersion, "new launches use the latest published version")

	// A draft v3 does not change what researchers launch.
	tpl.Description = "Draft"
	_, _, err = admin.Save(ctx, erin, tpl)
	require.NoError(t, err)
	latest, err := f.svc.Template(ctx, tpl.Name, 0)
	require.NoError(t, err)
	assert.Equal(t, 2, latest.Version)

	// Retired: no launch, not offered, but the jobs still show.
	require.NoError(t, admin.Retire(ctx, erin, tpl.Name))
	req.LaunchID = launch.NewLaunchID()
	_, err = f.svc.Launch(ctx, f.alice, req)
	var ferrs problem.Fields
	require.ErrorAs(t, err, &ferrs)
	assert.Contains(t, ferrs.Error(), "retired")
	_, err = f.svc.Template(ctx, tpl.Name, 0)
	assert.Error(t, err, "the launch form of a retired template is gone")
	reader := launch.Reader{Templates: f.db, Records: f.db, Jobs: f.jobs}
	offered, err := reader.TemplatesFor(ctx, []string{f.team.Name})
	require.NoError(t, err)
	for _, o := range offered {
		assert.NotEqual(t, tpl.Name, o.Name, "a retired template is not offered")
	}
	for _, res := range []launch.Result{first, second} {
		rec, err := reader.Record(ctx, f.team.Name, res.Name)
		require.NoError(t, err)
		assert.Equal(t, tpl.Name, rec.Template)
		_, err = f.svc.Template(ctx, rec.Template, rec.TemplateVersion)
		require.NoError(t, err, "the job page still finds the retired template's version")
		require.Eventually(t, func() bool {
			_, err := reader.Status(f.team.Name, res.Name, catalog.KindTraining)
			return err == nil
		}, 30*time.Second, 200*time.Millisecond, "the job of a retired template still shows")
	}
}

func TestTemplateAdminRefusesToPublishPolicyViolations(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	admin := adminOf(t, f)
	erin := catalogadmin.Actor{Username: "erin", Via: "test"}
	cases := map[string]struct {
		change func(*catalog.Template)
		want   string
	}{
		"privileged pod": {func(t *catalog.Template) {
			t.SecurityContext = &corev1.SecurityContext{Privileged: new(true)}
		}, "may not run privileged"},
		"off-allowlist image": {func(t *catalog.Template) { t.Image = "ghcr.io/someone/trainer:1.0" }, "is not from an allowed registry"},
		"running as root": {func(t *catalog.Template) {
			t.SecurityContext = &corev1.SecurityContext{RunAsNonRoot: new(false)}
		}, "must run as a non-root user"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tpl := trainingTemplate(t, f, "bad-"+launch.NewLaunchID()[:6])
			tc.change(&tpl)
			tv, _, err := admin.Save(ctx, erin, tpl)
			require.NoError(t, err, "a draft may violate policy")
			_, violations, err := admin.Preview(ctx, &tpl)
			require.NoError(t, err)
			assert.True(t, containsSubstring(violations, tc.want), "preview lists %q in %v", tc.want, violations)
			_, err = admin.Publish(ctx, erin, tpl.Name, tv.Version)
			var perr *catalogadmin.PolicyError
			require.ErrorAs(t, err, &perr)
			assert.True(t, containsSubstring(perr.Violations, tc.want))
			_, err = f.svc.Template(ctx, tpl.Name, 0)
			assert.Error(t, err, "nothing was published")
		})
	}

	// Taking a registry off the allowlist stops launches at once.
	req := launch.Request{Team: f.team.Name, Template: "pytorch-train", LaunchID: launch.NewLaunchID(),
		Values: map[string]string{"gpus": "1", "cpu": "2", "memory": "8Gi"}}
	f.svc.Allowlist = f.db
	_, err := admin.SetAllowlist(ctx, erin, "quay.io/jupyter\ndocker.io/vllm\n")
	require.NoError(t, err)
	_, err = f.svc.Launch(ctx, f.alice, req)
	var ferrs problem.Fields
	require.True(t, errors.As(err, &ferrs), "got %v", err)
	assert.Contains(t, ferrs.Error(), "not from an allowed registry")
}

func containsSubstring(list []string, want string) bool {
	for _, s := range list {
		if strings.Contains(s, want) {
			return true
		}
	}
	return false
}
