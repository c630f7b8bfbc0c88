//go:build tools

// Package tools pins the helm command the chart tests render and lint with.
// Build it with `go build -C deploy/tools/helm -o <dir>/helm helm.sh/helm/v3/cmd/helm`.
package tools

import _ "helm.sh/helm/v3/cmd/helm"
