#!/usr/bin/env bash
# Builds the helm CLI of the release pinned in go.mod into OUT (default target/kube/bin, beside
# kubectl), from the Go module proxy: no release download, no container image. Later runs reuse the
# binary (a stamp of go.mod, go.sum, this script and ../go-built.sh) and Go's build cache.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../go-built.sh"
go_built_prepare helm "the chart's tests" "${1:-$HERE/../../target/kube/bin}"
STAMP="$OUT/.helm-stamp"
go_built_fresh "$STAMP" "$OUT/helm"
cd "$HERE"
HELM=$(go list -m -f '{{.Version}}' helm.sh/helm/v4)
echo "make helm: building helm $HELM into $OUT" >&2
started=$(date +%s)
go build -ldflags "-s -w -X helm.sh/helm/v4/internal/version.version=$HELM" -o "$OUT/helm" helm.sh/helm/v4/cmd/helm
go_built_stamp "$STAMP"
echo "make helm: built in $(( $(date +%s) - started )) s: $("$OUT/helm" version --short)" >&2
