#!/usr/bin/env bash
# `make node`: what the one-node cluster needs besides the control plane of `make kube`.
# - kubelet, kube-proxy, kube-scheduler and kube-controller-manager of the release pinned in
#   tools/kube/go.mod, built from the Go module proxy into OUT (default target/kube/bin);
# - the pause image (tools/node/pause.c, static) as an OCI archive in OUT/../images/pause.tar;
# - containerd, runc, the CNI plugins, iptables and conntrack from Debian's packages: installed when
#   missing and this runs as root, otherwise named in one line with the command that installs them.
# Later runs reuse what was built (a stamp of the pins, this script and tools/go-built.sh).
set -euo pipefail
NODE=$(cd "$(dirname "$0")" && pwd)
HERE=$(cd "$NODE/../kube" && pwd)
source "$HERE/../go-built.sh"
go_built_prepare node "the node's tests and make cluster-up" "${1:-$HERE/../../target/kube/bin}" "$NODE/build.sh" "$NODE/pause.c"

packages=()
for need in /usr/bin/containerd:containerd /usr/sbin/runc:runc /usr/lib/cni/bridge:containernetworking-plugins \
  /usr/sbin/iptables:iptables /usr/sbin/conntrack:conntrack /usr/bin/nsenter:util-linux /usr/bin/ip:iproute2; do
  [ -e "${need%%:*}" ] || packages+=("${need##*:}")
done
if [ ${#packages[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    echo "make node: installing Debian's ${packages[*]}" >&2
    apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${packages[@]}" >&2
  else
    echo "make node: missing Debian's ${packages[*]}: run as root, or: sudo apt-get install ${packages[*]}" >&2
    exit 1
  fi
fi

IMAGES="$OUT/../images"
STAMP="$OUT/.node-stamp"
go_built_fresh "$STAMP" "$OUT/kubelet" "$OUT/kube-proxy" "$OUT/kube-scheduler" "$OUT/kube-controller-manager" "$IMAGES/pause.tar"
command -v gcc >/dev/null || { echo "make node: gcc is missing (it builds the pause program)" >&2; exit 1; }
cd "$HERE"
K8S=$(go list -m -f '{{.Version}}' k8s.io/kubernetes)
echo "make node: building kubelet, kube-proxy, kube-scheduler and kube-controller-manager of Kubernetes $K8S into $OUT (the first build takes a while)" >&2
started=$(date +%s)
for command in kubelet kube-proxy kube-scheduler kube-controller-manager; do
  go build -ldflags "$(go_built_version_flags "$K8S")" -o "$OUT/$command" "k8s.io/kubernetes/cmd/$command"
done

rootfs=$(mktemp -d)
trap 'rm -rf "$rootfs"' EXIT
chmod 0755 "$rootfs"
mkdir -p "$rootfs/usr/local/bin"
gcc -static -O2 -o "$rootfs/usr/local/bin/pause" "$NODE/pause.c"
strip "$rootfs/usr/local/bin/pause"
source "$NODE/../image/oci.sh"
oci_archive "$rootfs" localhost/pause:1 '{"User":"65535:65535","Entrypoint":["/usr/local/bin/pause"]}' "$IMAGES/pause.tar"
go_built_stamp "$STAMP"
echo "make node: built in $(( $(date +%s) - started )) s: $("$OUT/kubelet" --version), $(containerd --version | awk '{print $3}'), runc $(runc --version | awk 'NR==1{print $3}')" >&2
