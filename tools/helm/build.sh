#!/usr/bin/env bash
# Builds the helm CLI of the release pinned in go.mod into OUT (default target/kube/bin, beside
# kubectl), from the Go module proxy: no release download, no container image. Later runs reuse the
# binary (a stamp of go.mod, go.sum and this script) and Go's build cache.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=$(mkdir -p "${1:-$HERE/../../target/kube/bin}" && cd "${1:-$HERE/../../target/kube/bin}" && pwd)
cd "$HERE"
if ! command -v go >/dev/null 2>&1; then
  echo "make helm: Go is not installed; the chart's tests need it (install Go 1.26 or newer, with access to the Go module proxy)" >&2
  exit 1
fi
STAMP="$OUT/.helm-stamp"
WANT=$(cat go.mod go.sum build.sh | sha256sum | cut -d' ' -f1)
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$WANT" ] && [ -x "$OUT/helm" ]; then
  exit 0
fi
HELM=$(go list -m -f '{{.Version}}' helm.sh/helm/v4)
echo "make helm: building helm $HELM into $OUT" >&2
started=$(date +%s)
export CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS="-trimpath -modcacherw -mod=readonly"
go build -ldflags "-s -w -X helm.sh/helm/v4/internal/version.version=$HELM" -o "$OUT/helm" helm.sh/helm/v4/cmd/helm
echo "$WANT" > "$STAMP"
echo "make helm: built in $(( $(date +%s) - started )) s: $("$OUT/helm" version --short)" >&2
