#!/usr/bin/env bash
# Builds kube-apiserver, etcd and kubectl of the release pinned in go.mod into OUT (default
# target/kube/bin), from the Go module proxy: no release download, no container image. Later runs
# reuse the binaries (a stamp of go.mod, go.sum, this script and ../go-built.sh) and Go's build cache.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../go-built.sh"
go_built_prepare kube "the real-API-server tests" "${1:-$HERE/../../target/kube/bin}"
STAMP="$OUT/.stamp"
go_built_fresh "$STAMP" "$OUT/kube-apiserver" "$OUT/etcd" "$OUT/kubectl"
cd "$HERE"
K8S=$(go list -m -f '{{.Version}}' k8s.io/kubernetes)
echo "make kube: building kube-apiserver, etcd and kubectl of Kubernetes $K8S into $OUT (the first build takes a while)" >&2
started=$(date +%s)
VERSION=$(go_built_version_flags "$K8S")
go build -ldflags "-s -w" -o "$OUT/etcd" go.etcd.io/etcd/server/v3
go build -ldflags "$VERSION" -o "$OUT/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver
go build -ldflags "$VERSION" -o "$OUT/kubectl" k8s.io/kubernetes/cmd/kubectl
go_built_stamp "$STAMP"
echo "make kube: built in $(( $(date +%s) - started )) s: $("$OUT/kube-apiserver" --version), etcd $("$OUT/etcd" --version | head -1 | awk '{print $3}')" >&2
