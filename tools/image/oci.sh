# Writes an OCI image archive (an image layout in a tar, as `ctr images import` and `podman load` read
# it) from a root file system folder, without a container engine. Sourced by the image scripts.
#   oci_archive ROOTFS NAME CONFIG OUT
# ROOTFS: the folder that becomes the image's one layer; NAME: the image reference it is imported as
# (e.g. docker.io/cloudogu/blueprint-operator:0.1.0); CONFIG: the JSON of the image config's "config"
# object (User, Entrypoint, Cmd, Env, Labels); OUT: the archive's path.
# The same inputs give the same bytes: files sorted, owned by 0:0, dated 1970-01-01, gzip without a name.
set -euo pipefail

oci_archive() {
  local rootfs=$1 name=$2 config=$3 out=$4
  local work
  work=$(mktemp -d)
  mkdir -p "$work/blobs/sha256"
  tar --create --file "$work/layer.tar" --directory "$rootfs" --sort=name --mtime=@0 \
    --owner=0 --group=0 --numeric-owner --format=posix --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime .
  local diff_id layer layer_size
  diff_id=$(sha256sum "$work/layer.tar" | cut -d' ' -f1)
  gzip -n -9 -c "$work/layer.tar" > "$work/layer.tar.gz"
  layer=$(sha256sum "$work/layer.tar.gz" | cut -d' ' -f1)
  layer_size=$(stat -c %s "$work/layer.tar.gz")
  mv "$work/layer.tar.gz" "$work/blobs/sha256/$layer"
  rm "$work/layer.tar"

  printf '{"architecture":"amd64","os":"linux","config":%s,"rootfs":{"type":"layers","diff_ids":["sha256:%s"]},"history":[{"created":"1970-01-01T00:00:00Z","created_by":"tools/image (no container engine)"}]}' \
    "$config" "$diff_id" > "$work/config.json"
  local config_digest config_size
  config_digest=$(sha256sum "$work/config.json" | cut -d' ' -f1)
  config_size=$(stat -c %s "$work/config.json")
  mv "$work/config.json" "$work/blobs/sha256/$config_digest"

  printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar+gzip","digest":"sha256:%s","size":%s}]}' \
    "$config_digest" "$config_size" "$layer" "$layer_size" > "$work/manifest.json"
  local manifest manifest_size
  manifest=$(sha256sum "$work/manifest.json" | cut -d' ' -f1)
  manifest_size=$(stat -c %s "$work/manifest.json")
  mv "$work/manifest.json" "$work/blobs/sha256/$manifest"

  # containerd names the imported image by io.containerd.image.name; the OCI name is the tag alone.
  printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%s,"platform":{"architecture":"amd64","os":"linux"},"annotations":{"io.containerd.image.name":"%s","org.opencontainers.image.ref.name":"%s"}}]}' \
    "$manifest" "$manifest_size" "$name" "${name##*:}" > "$work/index.json"
  printf '{"imageLayoutVersion":"1.0.0"}' > "$work/oci-layout"
  mkdir -p "$(dirname "$out")"
  tar --create --file "$out.partial" --directory "$work" --sort=name --mtime=@0 --owner=0 --group=0 \
    --numeric-owner oci-layout index.json blobs
  mv "$out.partial" "$out"
  rm -rf "$work"
}
