package kube

import (
	"slices"

	"k8s.io/client-go/rest"
)

// ForUser returns a copy of base that impersonates the given user and groups,
// so RBAC decisions and audit logs on the API server name the real person.
// base itself is not modified.
func ForUser(base *rest.Config, username string, groups []string) *rest.Config {
	cfg := rest.CopyConfig(base)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: username,
		Groups:   slices.Clone(groups),
	}
	return cfg
}
