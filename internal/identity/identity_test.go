package identity

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestPrefixesNameIdPIdentitiesInTheCluster(t *testing.T) {
	type names struct {
		User   string
		Groups []string
	}
	cases := map[string]struct {
		prefixes Prefixes
		want     names
	}{
		"zero value is the default prefix": {prefixes: Prefixes{},
			want: names{User: "oidc:system:admin", Groups: []string{"oidc:vision-researchers", "oidc:system:masters"}}},
		"configured": {prefixes: Prefixes{UserPrefix: "corp:", GroupPrefix: "corp-group:"},
			want: names{User: "corp:system:admin", Groups: []string{"corp-group:vision-researchers", "corp-group:system:masters"}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := names{User: tc.prefixes.User("system:admin"), Groups: tc.prefixes.Groups([]string{"vision-researchers", "system:masters"})}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("cluster names (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAnEmptyNameNeverBecomesTheBarePrefix(t *testing.T) {
	p := Prefixes{}
	if got := p.Group(""); got != "" {
		t.Errorf(`Group("") = %q, want "" (refused by the API server)`, got)
	}
	if got := p.User(""); got != "" {
		t.Errorf(`User("") = %q, want ""`, got)
	}
}

func TestReservedAndValidPrefix(t *testing.T) {
	for name, want := range map[string]bool{"system:masters": true, "system:": true, "systems": false, "oidc:system:masters": false, "": false} {
		if got := Reserved(name); got != want {
			t.Errorf("Reserved(%q) = %v, want %v", name, got, want)
		}
	}
	for prefix, want := range map[string]bool{"oidc:": true, "": false, "system:": false, "system:oidc:": false} {
		if got := ValidPrefix(prefix); got != want {
			t.Errorf("ValidPrefix(%q) = %v, want %v", prefix, got, want)
		}
	}
}
