#!/usr/bin/env bash
# Installs what podhost's tests need, and nothing twice.
#   - Debian packages: runc, CNI plugins (/usr/lib/cni), busybox-static (the
#     test image is built from /bin/busybox), iproute2, iptables, gcc and
#     libc6-dev (the C log driver, linked statically: make build), ...
#   - containerd 2.x (containerd, containerd-shim-runc-v2, ctr) built with
#     `go install` into a cache dir that survives between runs
#     ($PODHOST_CACHE_DIR, default /var/cache/podhost-test);
#   - the OCI registry the registry tests pull from (scripts/registry.sh);
#   - kube-apiserver and etcd for the cluster tests (scripts/kube-apiserver.sh).
# Everything a test needs is installed here, before the first test starts and
# never under a test's timeout; a failed step is one line naming it.
# Idempotent and silent when everything is in place. Safe to run
# concurrently (flock). Prints the containerd bin dir as the last stdout line.
#
#   scripts/deps.sh          everything the tests and benches need
#   scripts/deps.sh --run    what `make run` needs: packages and containerd
#                            (not the registry and the control plane of the
#                            tests: on a fresh machine they cost ~15 min of CPU)
set -euo pipefail

run_only=0
[[ ${1:-} == --run ]] && run_only=1

CONTAINERD_VERSION=${CONTAINERD_VERSION:-v2.2.9}
CACHE_DIR=${PODHOST_CACHE_DIR:-/var/cache/podhost-test}
BIN_DIR="$CACHE_DIR/containerd-$CONTAINERD_VERSION/bin"

log() { echo "deps: $*" >&2; }
die() { echo "deps: $*" >&2; exit 1; }

[[ $(id -u) == 0 ]] || die "must run as root (installs packages, builds into $CACHE_DIR)"
command -v go >/dev/null || die "go is not in PATH"

mkdir -p "$CACHE_DIR"
exec 9>"$CACHE_DIR/.deps.lock"
flock 9

apt_pkgs=(runc containernetworking-plugins busybox-static iproute2 iptables ca-certificates gcc libc6-dev)
need=()
for p in "${apt_pkgs[@]}"; do
	status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null) || true
	[[ $status == "install ok installed" ]] || need+=("$p")
done
if ((${#need[@]})); then
	log "installing Debian packages: ${need[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >&2 || die "apt-get update failed (Debian's package mirror unreachable?)"
	apt-get install -y -qq --no-install-recommends "${need[@]}" >&2 ||
		die "apt-get install ${need[*]} failed"
fi

# A cached build counts only if all three binaries run and report the
# wanted version (an interrupted build never passes). Outputs are captured
# first: `cmd | grep -q` can fail under pipefail when grep exits early.
have_containerd() {
	local want=${CONTAINERD_VERSION#v} out
	out=$("$BIN_DIR/containerd" --version 2>/dev/null) && [[ $out == *" $want"* ]] || return 1
	out=$("$BIN_DIR/ctr" --version 2>/dev/null) && [[ $out == *" $want"* ]] || return 1
	out=$("$BIN_DIR/containerd-shim-runc-v2" -v 2>/dev/null) && [[ $out == *"Version:"*" $want"* ]] || return 1
}

if ! have_containerd; then
	log "building containerd $CONTAINERD_VERSION into $BIN_DIR (first run only, a few minutes)"
	tmp="$CACHE_DIR/containerd-$CONTAINERD_VERSION/bin.tmp.$$"
	rm -rf "$tmp"
	mkdir -p "$tmp"
	trap 'rm -rf "$tmp"' EXIT
	# Static, no cgo: needs no C toolchain. `pkg@version` ignores the
	# current module, so podhost's go.mod is untouched.
	GOBIN="$tmp" GOFLAGS=-mod=mod CGO_ENABLED=0 go install -tags "no_btrfs no_devmapper no_zfs" \
		"github.com/containerd/containerd/v2/cmd/containerd@$CONTAINERD_VERSION" \
		"github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2@$CONTAINERD_VERSION" \
		"github.com/containerd/containerd/v2/cmd/ctr@$CONTAINERD_VERSION" >&2 ||
		die "go install of containerd $CONTAINERD_VERSION failed (module proxy unreachable? see above)"
	rm -rf "$BIN_DIR"
	mv "$tmp" "$BIN_DIR"
	trap - EXIT
	have_containerd || die "containerd $CONTAINERD_VERSION in $BIN_DIR does not run"
fi
if ((!run_only)); then
	# The registry: its own lock and cache dir (scripts/registry.sh).
	"$(dirname "$0")/registry.sh" >/dev/null || die "scripts/registry.sh failed: the test registry is not installed"
	# The control plane of the cluster tests: its own lock and cache dir.
	"$(dirname "$0")/kube-apiserver.sh" >/dev/null || die "scripts/kube-apiserver.sh failed: kube-apiserver and etcd are not installed"
fi
echo "$BIN_DIR"
