// Package kube holds Gantry's Kubernetes plumbing: client construction, the
// scheme (core + Kueue), impersonation of the signed-in user, the mapping of
// API errors to typed errors, and the informer cache that pages read from.
package kube
