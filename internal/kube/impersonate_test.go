package kube

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/client-go/rest"

	"github.com/gantry-dev/gantry/internal/identity"
)

func TestForUser(t *testing.T) {
	base := &rest.Config{Host: "https://127.0.0.1:6443", BearerToken: "portal-token"}
	cases := map[string]struct {
		names      identity.Prefixes
		wantUser   string
		wantGroups []string
	}{
		"default prefix": {names: identity.Prefixes{}, wantUser: "oidc:alice", wantGroups: []string{"oidc:vision-researchers", "oidc:system:masters"}},
		"configured prefixes": {names: identity.Prefixes{UserPrefix: "corp-user:", GroupPrefix: "corp-group:"},
			wantUser: "corp-user:alice", wantGroups: []string{"corp-group:vision-researchers", "corp-group:system:masters"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			groups := []string{"vision-researchers", "system:masters"}
			got := ForUser(base, tc.names, "alice", groups)
			groups[0] = "changed-after-call"

			assert.Equal(t, tc.wantUser, got.Impersonate.UserName)
			assert.Equal(t, tc.wantGroups, got.Impersonate.Groups, "a group from the IdP never reaches the API server unprefixed")
			assert.Equal(t, base.Host, got.Host)
			assert.Equal(t, "portal-token", got.BearerToken, "the portal's own credentials authenticate the impersonation")
			assert.Empty(t, base.Impersonate.UserName, "base config must not change")
		})
	}
}
