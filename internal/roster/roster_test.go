package roster

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestParse(t *testing.T) {
	f, err := Parse([]byte(`
cohort: gantry
teams:
  - name: vision
    displayName: Computer Vision
    costCenter: CC-1001
    memberGroups: [vision-researchers]
    leadGroups: [vision-leads]
    quotas:
      h100: {nvidia.com/gpu: 16, cpu: 128, memory: 1Ti}
  - name: nlp
    memberGroups: [nlp-researchers]
`))
	require.NoError(t, err)
	assert.Equal(t, "gantry", f.Cohort)
	assert.Equal(t, []Team{
		{Name: "vision", DisplayName: "Computer Vision", CostCenter: "CC-1001", MemberGroups: []string{"vision-researchers"}, LeadGroups: []string{"vision-leads"}},
		{Name: "nlp", DisplayName: "nlp", MemberGroups: []string{"nlp-researchers"}},
	}, f.Records(), "a team without a display name is shown by its name")
	gpus := f.Teams[0].Quotas["h100"]["nvidia.com/gpu"]
	assert.Equal(t, 0, gpus.Cmp(resource.MustParse("16")), "vision's h100 GPUs: %s", gpus.String())
}

func TestParseInvalid(t *testing.T) {
	cases := map[string]struct {
		yaml    string
		wantErr string
	}{
		"no name":        {yaml: "teams:\n  - displayName: X\n", wantErr: "has no name"},
		"duplicate":      {yaml: "teams:\n  - name: a\n  - name: a\n", wantErr: "listed twice"},
		"not yaml":       {yaml: "teams: [", wantErr: "parse teams"},
		"misspelt field": {yaml: "teams:\n  - name: a\n    memberGroup: [a-researchers]\n", wantErr: `unknown field "memberGroup"`},
		"misspelt quota": {yaml: "teams:\n  - name: a\n    quota: {}\n", wantErr: `unknown field "quota"`},
		"bad quantity":   {yaml: "teams:\n  - name: a\n    quotas: {h100: {cpu: lots}}\n", wantErr: "quantities must match"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Parse([]byte(tc.yaml))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.wantErr)
		})
	}
}
