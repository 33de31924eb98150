#!/usr/bin/env bash
# Builds kube-apiserver, etcd and kubectl of the release pinned in go.mod into OUT (default
# target/kube/bin), from the Go module proxy: no release download, no container image. Later runs
# reuse the binaries (a stamp of go.mod, go.sum and this script) and Go's build cache.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=$(mkdir -p "${1:-$HERE/../../target/kube/bin}" && cd "${1:-$HERE/../../target/kube/bin}" && pwd)
cd "$HERE"
if ! command -v go >/dev/null 2>&1; then
  echo "make kube: Go is not installed; the real-API-server tests need it (install Go 1.26 or newer, with access to the Go module proxy)" >&2
  exit 1
fi
STAMP="$OUT/.stamp"
WANT=$(cat go.mod go.sum build.sh | sha256sum | cut -d' ' -f1)
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$WANT" ] && [ -x "$OUT/kube-apiserver" ] && [ -x "$OUT/etcd" ] && [ -x "$OUT/kubectl" ]; then
  exit 0
fi
K8S=$(go list -m -f '{{.Version}}' k8s.io/kubernetes)
MINOR=$(echo "$K8S" | cut -d. -f2)
echo "make kube: building kube-apiserver, etcd and kubectl of Kubernetes $K8S into $OUT (the first build takes a while)" >&2
started=$(date +%s)
export CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS="-trimpath -modcacherw -mod=readonly"
VERSION="-s -w -X k8s.io/component-base/version.gitVersion=$K8S -X k8s.io/component-base/version.gitMajor=1 \
  -X k8s.io/component-base/version.gitMinor=$MINOR -X k8s.io/component-base/version.gitTreeState=clean \
  -X k8s.io/component-base/version.buildDate=1970-01-01T00:00:00Z \
  -X k8s.io/client-go/pkg/version.gitVersion=$K8S -X k8s.io/client-go/pkg/version.gitMajor=1 \
  -X k8s.io/client-go/pkg/version.gitMinor=$MINOR"
go build -ldflags "-s -w" -o "$OUT/etcd" go.etcd.io/etcd/server/v3
go build -ldflags "$VERSION" -o "$OUT/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver
go build -ldflags "$VERSION" -o "$OUT/kubectl" k8s.io/kubernetes/cmd/kubectl
echo "$WANT" > "$STAMP"
echo "make kube: built in $(( $(date +%s) - started )) s: $("$OUT/kube-apiserver" --version), etcd $("$OUT/etcd" --version | head -1 | awk '{print $3}')" >&2
