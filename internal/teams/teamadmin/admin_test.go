package teamadmin

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gantry-dev/gantry/internal/problem"
	"github.com/gantry-dev/gantry/internal/store"
)

func TestCreateRefusesBadInputInWords(t *testing.T) {
	valid := Form{Name: "speech", MemberGroups: []string{"speech-researchers"}, LeadGroups: []string{"speech-leads"}}
	cases := map[string]struct {
		edit  func(*Form)
		field string
	}{
		"upper-case name":     {edit: func(f *Form) { f.Name = "Speech" }, field: FieldName},
		"name too long":       {edit: func(f *Form) { f.Name = "a123456789012345678901234567890123456789012" }, field: FieldName},
		"no researcher group": {edit: func(f *Form) { f.MemberGroups = nil }, field: FieldMemberGroups},
		"no lead group":       {edit: func(f *Form) { f.LeadGroups = nil }, field: FieldLeadGroups},
		"group with a space":  {edit: func(f *Form) { f.LeadGroups = []string{"speech leads"} }, field: FieldMemberGroups},
		"negative ceiling": {edit: func(f *Form) {
			f.Ceilings = []store.TeamCeiling{{Flavor: "h100", Resource: "nvidia.com/gpu", Ceiling: -1}}
		}, field: FieldCeilings},
		"cost center too long": {edit: func(f *Form) { f.CostCenter = string(make([]byte, 51)) }, field: FieldCostCenter},
	}
	a := New(nil, nil, nil, "gantry", nil, nil) // validation fails before anything is touched
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := valid
			tc.edit(&f)
			_, err := a.Create(context.Background(), Actor{Username: "erin"}, f)
			var verr problem.Fields
			require.ErrorAs(t, err, &verr)
			assert.NotEmpty(t, verr[tc.field])
		})
	}
}
