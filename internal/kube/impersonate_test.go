package kube

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/client-go/rest"
)

func TestForUser(t *testing.T) {
	base := &rest.Config{Host: "https://127.0.0.1:6443", BearerToken: "portal-token"}
	groups := []string{"vision-researchers"}

	got := ForUser(base, "alice", groups)
	groups[0] = "changed-after-call"

	assert.Equal(t, "alice", got.Impersonate.UserName)
	assert.Equal(t, []string{"vision-researchers"}, got.Impersonate.Groups)
	assert.Equal(t, base.Host, got.Host)
	assert.Equal(t, "portal-token", got.BearerToken, "the portal's own credentials authenticate the impersonation")
	assert.Empty(t, base.Impersonate.UserName, "base config must not change")
}
