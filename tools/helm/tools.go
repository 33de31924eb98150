//go:build tools

// Package tools pins helm's command in go.mod so that `go build` builds exactly that release.
package tools

import _ "helm.sh/helm/v4/cmd/helm"
