// Package kube holds Gantry's Kubernetes plumbing: client construction, the
// scheme (core + Kueue), impersonation of the signed-in user, the mapping of
// API errors to typed errors, and the informer cache that pages read from.
package kube

// TeamLabel marks every namespace and ClusterQueue that belongs to a Gantry team;
// its value is the team name.
const TeamLabel = "gantry.dev/team"
