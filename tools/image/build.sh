#!/usr/bin/env bash
# `make image`: the operator's OCI image, built offline without a container engine, from the release
# binary and what it needs at run time: the shared libraries it links (ldd) and the CA certificates, as
# Debian's packages installed on this machine provide them (the files distroless/cc-debian12 holds),
# plus the nonroot user (65532). The image's user, entrypoint, command and binary path are read from the
# Dockerfile's last stage, so both ways to build the image give the same one (tests/image.rs).
#   tools/image/build.sh BINARY NAME OUT
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/oci.sh"
BINARY=${1:?the release binary}
NAME=${2:?the image name}
OUT=${3:?the archive to write}
DOCKERFILE="$HERE/../../Dockerfile"

for tool in ldd dpkg-query tar gzip sha256sum; do
  command -v "$tool" >/dev/null || { echo "make image: $tool is missing (a Debian machine has it)" >&2; exit 1; }
done
[ -x "$BINARY" ] || { echo "make image: $BINARY is missing: cargo build --release --locked" >&2; exit 1; }

# The Dockerfile's last stage: the binary's path and the config lines (JSON arrays kept as written).
final=$(awk '/^FROM /{stage=""} {stage=stage $0 "\n"} END{printf "%s", stage}' "$DOCKERFILE")
dest=$(printf '%s' "$final" | awk '/^COPY --from=build /{print $NF}')
user=$(printf '%s' "$final" | awk '/^USER /{print $2}')
entrypoint=$(printf '%s' "$final" | sed -n 's/^ENTRYPOINT //p')
cmd=$(printf '%s' "$final" | sed -n 's/^CMD //p')
for value in dest user entrypoint cmd; do
  [ -n "${!value}" ] || { echo "make image: the Dockerfile's last stage has no ${value^^}" >&2; exit 1; }
done

rootfs=$(mktemp -d)
trap 'rm -rf "$rootfs"' EXIT
# The image's / (mktemp makes it 0700: the nonroot user could not reach anything).
chmod 0755 "$rootfs"
install -D -m 0755 "$BINARY" "$rootfs$dest"

# Each library as the binary's loader finds it on this machine, at the path the loader looks for it.
packages=()
while read -r library; do
  install -D -m 0755 "$(readlink -f "$library")" "$rootfs$library"
  # dpkg names the path as the package installs it (/lib/...), which on a merged /usr is a link.
  owner=$( (dpkg-query -S "$library" 2>/dev/null || dpkg-query -S "$(readlink -f "$library")" 2>/dev/null) | head -1 | cut -d: -f1) || owner=""
  [ -n "$owner" ] && packages+=("$owner")
done < <(ldd "$BINARY" | awk '/=> \//{print $3} /^\t\/[^ ]+ \(/{print $1}')

install -D -m 0644 /etc/ssl/certs/ca-certificates.crt "$rootfs/etc/ssl/certs/ca-certificates.crt"
packages+=(ca-certificates)

mapfile -t packages < <(printf '%s\n' "${packages[@]}" | sort -u)
described=()
for package in "${packages[@]}"; do
  version=$(dpkg-query -W -f '${Version}' "$package")
  described+=("$package=$version")
  copyright=/usr/share/doc/${package%%:*}/copyright
  [ -f "$copyright" ] && install -D -m 0644 "$copyright" "$rootfs$copyright"
done

mkdir -p "$rootfs/etc" "$rootfs/tmp" "$rootfs/home/nonroot"
chmod 1777 "$rootfs/tmp"
printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' > "$rootfs/etc/passwd"
printf 'root:x:0:\nnonroot:x:65532:\n' > "$rootfs/etc/group"

version=${NAME##*:}
config=$(printf '{"User":"%s","Entrypoint":%s,"Cmd":%s,"Env":["PATH=/usr/local/bin:/usr/bin:/bin","SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"],"Labels":{"org.opencontainers.image.title":"blueprint-operator","org.opencontainers.image.version":"%s","org.opencontainers.image.base.name":"debian-packages:%s"}}' \
  "$user" "$entrypoint" "$cmd" "$version" "$(IFS=,; echo "${described[*]}")")
oci_archive "$rootfs" "$NAME" "$config" "$OUT"
echo "make image: $NAME in $OUT ($(( $(stat -c %s "$OUT") / 1024 )) KiB; the binary $(( $(stat -c %s "$BINARY") / 1024 )) KiB; from ${described[*]})" >&2
