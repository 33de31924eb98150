# Shared by tools/*/build.sh (sourced): the output folder, the check for Go, and the stamp that lets a
# later run reuse what was built. HERE is the calling script's folder (beside its go.mod and go.sum);
# go_built_prepare runs before the script changes into it, so that OUT resolves from where make runs.
#   go_built_prepare NAME WHAT OUT [FILE...]   NAME: the make target; WHAT: who needs it; OUT: the
#                                        folder; FILEs: more inputs the stamp covers
#   go_built_version_flags VERSION      the -ldflags that make a Kubernetes binary report VERSION
#   go_built_fresh STAMP FILE...        exits 0 (nothing to do) when the stamp matches and FILEs exist
#                                        (not empty)
#   go_built_stamp STAMP                records the stamp after a build
set -euo pipefail

go_built_prepare() {
  local name=$1 what=$2 out=$3
  shift 3
  OUT=$(mkdir -p "$out" && cd "$out" && pwd)
  if ! command -v go >/dev/null 2>&1; then
    echo "make $name: Go is not installed; $what need it (install Go 1.26 or newer, with access to the Go module proxy)" >&2
    exit 1
  fi
  # The stamp covers the pins, the calling script and this file.
  WANT=$(cat "$HERE/go.mod" "$HERE/go.sum" "$HERE/build.sh" "$HERE/../go-built.sh" "$@" | sha256sum | cut -d' ' -f1)
  export CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS="-trimpath -modcacherw -mod=readonly"
}

go_built_fresh() {
  local stamp=$1 file
  shift
  [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$WANT" ] || return 0
  # Present and not empty: the binaries and the pause image's archive (-x would ask a .tar to be
  # executable, and so built everything again on every run).
  for file in "$@"; do
    [ -s "$file" ] || return 0
  done
  exit 0
}

go_built_stamp() {
  echo "$WANT" > "$1"
}

go_built_version_flags() {
  local version=$1 minor
  minor=$(echo "$version" | cut -d. -f2)
  echo "-s -w -X k8s.io/component-base/version.gitVersion=$version -X k8s.io/component-base/version.gitMajor=1" \
    "-X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean" \
    "-X k8s.io/component-base/version.buildDate=1970-01-01T00:00:00Z" \
    "-X k8s.io/client-go/pkg/version.gitVersion=$version -X k8s.io/client-go/pkg/version.gitMajor=1" \
    "-X k8s.io/client-go/pkg/version.gitMinor=$minor"
}
