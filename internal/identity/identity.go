// Package identity owns how the portal's IdP users and groups are named in
// the cluster: with a prefix on the username and on every group, so an IdP
// value can never become a Kubernetes system: identity, and one RoleBinding
// serves kubectl users (whose OIDC authenticator adds the same prefix) and
// the portal alike.
package identity

import "strings"

// DefaultPrefix is the prefix of IdP users and groups unless configured
// otherwise: the prefix a cluster's own OIDC authenticator is usually given.
const DefaultPrefix = "oidc:"

// ReservedPrefix starts the names Kubernetes reserves for its own
// components (system:masters, system:kube-controller-manager, …).
const ReservedPrefix = "system:"

// Prefixes name IdP identities in the cluster. An empty prefix means
// DefaultPrefix, so the zero value is safe.
type Prefixes struct {
	UserPrefix  string
	GroupPrefix string
}

// User is the cluster name of an IdP username. An empty name stays empty
// (the API server refuses it) rather than becoming the bare prefix.
func (p Prefixes) User(username string) string {
	return prefixed(p.UserPrefix, username)
}

// Group is the cluster name of an IdP group, as team RoleBindings bind it.
// An empty name stays empty (the API server refuses it) rather than
// becoming the bare prefix, a group someone might bind.
func (p Prefixes) Group(group string) string {
	return prefixed(p.GroupPrefix, group)
}

// Groups are the cluster names of IdP groups, in order; nil for none.
func (p Prefixes) Groups(groups []string) []string {
	if len(groups) == 0 {
		return nil
	}
	out := make([]string, len(groups))
	for i, g := range groups {
		out[i] = p.Group(g)
	}
	return out
}

// Reserved reports whether an IdP username or group is one Kubernetes
// reserves; the portal refuses such logins.
func Reserved(name string) bool {
	return strings.HasPrefix(name, ReservedPrefix)
}

// ValidPrefix reports whether a configured prefix keeps IdP names out of
// the reserved ones: not empty and not itself starting with system:.
func ValidPrefix(prefix string) bool {
	return prefix != "" && !Reserved(prefix)
}

func prefixed(prefix, name string) string {
	switch {
	case name == "":
		return ""
	case prefix == "":
		return DefaultPrefix + name
	}
	return prefix + name
}
