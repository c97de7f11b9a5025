#!/usr/bin/env bash
# Installs what podhost's tests need, and nothing twice.
#   - Debian packages: runc, CNI plugins, busybox-static, iproute2, iptables, ...
#   - containerd 2.x (containerd, containerd-shim-runc-v2, ctr) built with
#     `go install` into a cache dir that survives between runs.
# Prints the cache bin dir on stdout's last line.
set -euo pipefail

CONTAINERD_VERSION=${CONTAINERD_VERSION:-v2.2.1}
CACHE_DIR=${PODHOST_CACHE_DIR:-/var/cache/podhost-test}
BIN_DIR="$CACHE_DIR/containerd-$CONTAINERD_VERSION/bin"

log() { echo "deps: $*" >&2; }

apt_pkgs=(runc containernetworking-plugins busybox-static iproute2 iptables ca-certificates)
need=()
for p in "${apt_pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need+=("$p")
done
if ((${#need[@]})); then
	log "installing Debian packages: ${need[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >&2
	apt-get install -y -qq --no-install-recommends "${need[@]}" >&2
fi

if [[ ! -x "$BIN_DIR/containerd" || ! -x "$BIN_DIR/containerd-shim-runc-v2" || ! -x "$BIN_DIR/ctr" ]]; then
	log "building containerd $CONTAINERD_VERSION into $BIN_DIR (first run only, a few minutes)"
	mkdir -p "$BIN_DIR"
	GOBIN="$BIN_DIR" GOFLAGS=-mod=mod CGO_ENABLED=1 go install -tags "no_btrfs no_devmapper no_zfs" \
		"github.com/containerd/containerd/v2/cmd/containerd@$CONTAINERD_VERSION" \
		"github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2@$CONTAINERD_VERSION" \
		"github.com/containerd/containerd/v2/cmd/ctr@$CONTAINERD_VERSION" >&2
fi
echo "$BIN_DIR"
