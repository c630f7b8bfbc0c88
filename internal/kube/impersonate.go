package kube

import (
	"k8s.io/client-go/rest"

	"github.com/gantry-dev/gantry/internal/identity"
)

// ForUser returns a copy of base that impersonates the IdP user with the
// given IdP groups, both carrying their prefixes, so RBAC decisions and
// audit logs on the API server name the real person and an IdP value can
// never become a system: identity. base itself is not modified.
func ForUser(base *rest.Config, names identity.Prefixes, username string, groups []string) *rest.Config {
	cfg := rest.CopyConfig(base)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: names.User(username),
		Groups:   names.Groups(groups),
	}
	return cfg
}
