#!/usr/bin/env bash
# Builds an OCI image layout tarball of a busybox image with no network:
# one layer holding the host's busybox-static (/bin/busybox + applet links).
#   mkoci.sh OUT.tar [REF]        REF defaults to podhost.test/busybox:1
# Importable with `ctr -n podhost images import OUT.tar` (the index carries
# io.containerd.image.name) and `podhost images import OUT.tar`.
# Deterministic: same busybox, same bytes.
#
# Fallback for scripts/vm/run.sh when the repo has no internal/testenv image
# builder (cmd: go run ./internal/testenv/cmd/mkimage).
set -euo pipefail
out=${1:?usage: mkoci.sh OUT.tar [REF]}
ref=${2:-podhost.test/busybox:1}
bb=${BUSYBOX:-/bin/busybox}
[[ -x $bb ]] || {
	echo "mkoci: $bb missing (apt-get install busybox-static)" >&2
	exit 1
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
r="$tmp/rootfs"
mkdir -p "$r/bin" "$r/tmp" "$r/etc" "$r/proc" "$r/sys" "$r/dev" "$r/root"
chmod 1777 "$r/tmp"
cp "$bb" "$r/bin/busybox"
for a in $("$bb" --list); do
	[[ $a == busybox ]] || ln -s busybox "$r/bin/$a"
done
printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n' >"$r/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' >"$r/etc/group"

tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner --format=posix \
	--pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime \
	-C "$r" -cf "$tmp/layer.tar" .
layer_sha=$(sha256sum "$tmp/layer.tar" | cut -d' ' -f1)
layer_size=$(stat -c %s "$tmp/layer.tar")

L="$tmp/oci"
mkdir -p "$L/blobs/sha256"
mv "$tmp/layer.tar" "$L/blobs/sha256/$layer_sha"

blob() { # file -> prints "sha size" after moving it into blobs
	local s
	s=$(sha256sum "$1" | cut -d' ' -f1)
	local n
	n=$(stat -c %s "$1")
	mv "$1" "$L/blobs/sha256/$s"
	echo "$s $n"
}

printf '{"architecture":"amd64","os":"linux","config":{"Env":["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],"Cmd":["sh"],"WorkingDir":"/"},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]},"history":[{"created_by":"podhost scripts/vm/mkoci.sh"}]}' \
	"$layer_sha" >"$tmp/config.json"
read -r cfg_sha cfg_size < <(blob "$tmp/config.json")

printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"sha256:%s","size":%s}]}' \
	"$cfg_sha" "$cfg_size" "$layer_sha" "$layer_size" >"$tmp/manifest.json"
read -r man_sha man_size < <(blob "$tmp/manifest.json")

tag=${ref##*:}
printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%s,"platform":{"architecture":"amd64","os":"linux"},"annotations":{"io.containerd.image.name":"%s","org.opencontainers.image.ref.name":"%s"}}]}' \
	"$man_sha" "$man_size" "$ref" "$tag" >"$L/index.json"
printf '{"imageLayoutVersion":"1.0.0"}' >"$L/oci-layout"

tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$L" -cf "$out.tmp" oci-layout index.json blobs
mv "$out.tmp" "$out"
echo "mkoci: $out ($ref, manifest sha256:$man_sha)" >&2
