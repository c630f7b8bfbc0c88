package catalogadmin_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gantry-dev/gantry/internal/audit"
	"github.com/gantry-dev/gantry/internal/catalog"
	"github.com/gantry-dev/gantry/internal/catalog/catalogadmin"
	"github.com/gantry-dev/gantry/internal/cost"
	"github.com/gantry-dev/gantry/internal/devcluster/stacktest"
	"github.com/gantry-dev/gantry/internal/launch"
	"github.com/gantry-dev/gantry/internal/store"
)

func repoPath(parts ...string) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(append([]string{filepath.Dir(file), "..", "..", ".."}, parts...)...)
}

func newAdmin(t *testing.T) (*catalogadmin.Admin, *store.Store) {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, stacktest.Postgres(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	require.NoError(t, store.Migrate(ctx, db.SQL(), slog.New(slog.NewTextHandler(io.Discard, nil))))
	return &catalogadmin.Admin{Store: db, Audit: audit.New(db, nil)}, db
}

var erin = catalogadmin.Actor{Username: "erin", Via: "test"}

func TestExportThenImportRoundTripsEveryTemplate(t *testing.T) {
	admin, _ := newAdmin(t)
	ctx := context.Background()
	files, err := filepath.Glob(repoPath("deploy", "templates", "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			require.NoError(t, err)
			imported, err := admin.Import(ctx, erin, string(data))
			require.NoError(t, err)
			require.Len(t, imported, 1)
			tv := imported[0]

			exported, err := admin.Export(ctx, tv.Name, tv.Version)
			require.NoError(t, err)
			again, err := admin.Import(ctx, erin, string(exported))
			require.NoError(t, err)
			assert.Equal(t, tv.Version, again[0].Version, "importing the export changes nothing, so no new version")
			assert.Equal(t, tv.Digest, again[0].Digest)

			reexported, err := admin.Export(ctx, tv.Name, again[0].Version)
			require.NoError(t, err)
			assert.Equal(t, string(exported), string(reexported))
			original, err := catalog.Parse(data)
			require.NoError(t, err)
			back, err := catalog.Parse(exported)
			require.NoError(t, err)
			assert.Equal(t, original, back, "the exported file is the same template as the seeded file")
		})
	}
}

func TestImportAndEditorProblemsAreSentences(t *testing.T) {
	admin, _ := newAdmin(t)
	cases := map[string]struct {
		yaml string
		want string
	}{
		"not YAML":      {"name: [", "The YAML is not a template file"},
		"unknown field": {"name: x\nflavour: h100\n", "The YAML is not a template file: unknown field \"flavour\"."},
		"empty":         {"# nothing\n", "The text holds no template."},
		"bad name":      {"name: Bad_Name\nkind: training\ntitle: T\nimage: nvcr.io/x:1\ngpuTypes: [{name: a, label: A, pool: p, resource: nvidia.com/gpu}]\nparameters: {gpus: {min: 1, max: 1, default: 1}, cpu: {min: '1', max: '2', default: '1'}, memory: {min: 1Gi, max: 2Gi, default: 1Gi}}\n", "Name \"Bad_Name\" must be lowercase"},
		"no GPU types":  {"name: ok\nkind: training\ntitle: T\nimage: nvcr.io/x:1\ngpuTypes: []\nparameters: {gpus: {min: 1, max: 1, default: 1}, cpu: {min: '1', max: '2', default: '1'}, memory: {min: 1Gi, max: 2Gi, default: 1Gi}}\n", "At least one GPU type is required."},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := admin.Import(context.Background(), erin, tc.yaml)
			var verr *catalogadmin.ValidationError
			require.ErrorAs(t, err, &verr)
			assert.Contains(t, verr.Error(), tc.want)
			for _, p := range verr.Problems {
				assert.Regexp(t, `^[A-Z].*\.$`, p, "each problem is a sentence")
			}
		})
	}
}

func TestPriceChangeAppliesOnlyFromItsEffectiveDate(t *testing.T) {
	admin, db := newAdmin(t)
	ctx := context.Background()
	day := func(month time.Month, d int) time.Time { return time.Date(2031, month, d, 0, 0, 0, 0, time.UTC) }
	const flavor, res = "h100-sxm-ib-training", "nvidia.com/gpu"
	now := day(time.January, 1).Add(9 * time.Hour)
	admin.Now = func() time.Time { return now }

	_, err := admin.SetPrice(ctx, erin, catalogadmin.PriceForm{Flavor: flavor, Resource: res, USDPerHour: "2.00", EffectiveFrom: "2031-01-01"})
	require.NoError(t, err)
	_, err = admin.SetPrice(ctx, erin, catalogadmin.PriceForm{Flavor: flavor, Resource: res, USDPerHour: "3.50", EffectiveFrom: "2031-02-01"})
	require.NoError(t, err)

	ledger := &cost.Ledger{Store: db, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	run := func(admitted time.Time) cost.Run {
		return cost.Run{Allocation: cost.Allocation{Flavor: flavor, Resource: res, GPUs: 2}, WorkloadUID: "uid-" + admitted.Format("0102"),
			Namespace: "team-vision", JobName: "train", JobKind: "Job", Created: admitted, Admitted: admitted, Ended: admitted.Add(time.Hour), Outcome: "succeeded"}
	}
	cases := map[string]struct {
		admitted time.Time
		wantUSD  string
	}{
		"before the change: old price":  {day(time.January, 15), "$4.00"},
		"after the change: new price":   {day(time.February, 15), "$7.00"},
		"before the first price: free":  {day(time.January, 1).Add(8 * time.Hour), "$0.00"},
		"the day the change takes hold": {day(time.February, 1), "$7.00"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			row, err := ledger.Row(ctx, run(tc.admitted))
			require.NoError(t, err)
			assert.Equal(t, tc.wantUSD, row.CostUSD.String())
		})
	}

	// Later, a price for a date already past is refused: past costs stay.
	now = day(time.March, 1)
	_, err = admin.SetPrice(ctx, erin, catalogadmin.PriceForm{Flavor: flavor, Resource: res, USDPerHour: "9", EffectiveFrom: "2031-01-10"})
	var verr *catalogadmin.ValidationError
	require.ErrorAs(t, err, &verr)
	assert.Contains(t, verr.Error(), "cannot be in the past")
	row, err := ledger.Row(ctx, run(day(time.January, 15)))
	require.NoError(t, err)
	assert.Equal(t, "$4.00", row.CostUSD.String())

	entries, _, err := db.AuditPage(ctx, store.AuditQuery{Action: catalogadmin.ActionPriceSet, Limit: 50})
	require.NoError(t, err)
	assert.Len(t, entries, 2, "each price set is audited")
}

func TestAllowlistIsSeededOnceThenTheAdminsTableIsTheTruth(t *testing.T) {
	admin, db := newAdmin(t)
	ctx := context.Background()
	created, err := db.SeedImageAllowlist(ctx, []string{"nvcr.io"}, "config")
	require.NoError(t, err)
	assert.True(t, created)
	_, err = admin.SetAllowlist(ctx, erin, "nvcr.io\nquay.io/jupyter\n\n")
	require.NoError(t, err)
	created, err = db.SeedImageAllowlist(ctx, []string{"docker.io"}, "config")
	require.NoError(t, err)
	assert.False(t, created, "a restart with configuration does not overwrite the admin's list")
	regs, err := db.ImageRegistries(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"nvcr.io", "quay.io/jupyter"}, regs)
}

func TestParseRegistries(t *testing.T) {
	cases := map[string]struct {
		text    string
		want    []string
		wantErr string
	}{
		"hosts and paths":         {"nvcr.io\n docker.io/vllm/ \nlocalhost:5000\n", []string{"nvcr.io", "docker.io/vllm", "localhost:5000"}, ""},
		"duplicates and case":     {"NVCR.io\nnvcr.io\n", []string{"nvcr.io"}, ""},
		"empty allows nothing":    {"\n\n", nil, ""},
		"a URL is not a registry": {"https://nvcr.io\n", nil, "is not a registry"},
		"a tag is not a registry": {"nvcr.io/nvidia/pytorch:24.01\n", nil, "is not a registry"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := catalogadmin.ParseRegistries(tc.text)
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestRestartSeedingKeepsTheAdminsVersions(t *testing.T) {
	admin, db := newAdmin(t)
	ctx := context.Background()
	_, err := db.SeedImageAllowlist(ctx, []string{"nvcr.io"}, "test")
	require.NoError(t, err)
	dir := t.TempDir()
	data, err := os.ReadFile(repoPath("deploy", "templates", "pytorch-train.yaml"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "pytorch-train.yaml"), data, 0o644))
	n, err := launch.SeedTemplates(ctx, db, dir)
	require.NoError(t, err)
	require.Equal(t, 1, n)

	tv, tpl, err := admin.Version(ctx, "pytorch-train", 0)
	require.NoError(t, err)
	require.False(t, tv.Draft, "seeded templates are published")
	tpl.Description = "Edited in the portal"
	v2, _, err := admin.Save(ctx, erin, tpl)
	require.NoError(t, err)
	_, err = admin.Publish(ctx, erin, "pytorch-train", v2.Version)
	require.NoError(t, err)

	n, err = launch.SeedTemplates(ctx, db, dir)
	require.NoError(t, err)
	assert.Equal(t, 0, n, "a restart with the same file does not undo the admin's version")
	latest, err := db.TemplateVersionOf(ctx, "pytorch-train", 0)
	require.NoError(t, err)
	assert.Equal(t, v2.Version, latest.Version)

	changed := strings.Replace(string(data), "title: PyTorch training (one node)", "title: PyTorch training, from Git", 1)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "pytorch-train.yaml"), []byte(changed), 0o644))
	n, err = launch.SeedTemplates(ctx, db, dir)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "a changed file arrives as a new version")
	latest, err = db.TemplateVersionOf(ctx, "pytorch-train", 0)
	require.NoError(t, err)
	assert.Equal(t, "PyTorch training, from Git", latest.Title)
}
