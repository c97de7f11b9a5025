#!/usr/bin/env bash
# Installs the Kubernetes control plane podhost's cluster tests run against:
# kube-apiserver (k8s.io/kubernetes/cmd/kube-apiserver) and etcd
# (go.etcd.io/etcd/server/v3), built from the Go module proxy into the test
# cache dir that scripts/deps.sh uses:
#   $PODHOST_CACHE_DIR (default /var/cache/podhost-test)/kube-apiserver-<ver>/bin
# <ver> is the Kubernetes release matching go.mod's k8s.io/api (v0.X.Y ->
# v1.X.Y), so the API server speaks exactly the API podhost's client-go does.
#
# k8s.io/kubernetes cannot be `go install`ed (its go.mod replaces the staging
# modules k8s.io/api, k8s.io/apiserver, ... with ./staging/src paths), so
# the build runs in a throwaway module that requires k8s.io/kubernetes and
# replaces every staging module with its published v0.X.Y. etcd's server is
# built in the same module at the version Kubernetes pins.
# Heavy (~10 min of CPU on 2 cores, the first time only): run under nice so
# timing-sensitive tests on a shared machine are not starved.
# Idempotent and silent when the binaries are in place; safe to run
# concurrently (flock). Prints the bin dir as the last stdout line.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
CACHE_DIR=${PODHOST_CACHE_DIR:-/var/cache/podhost-test}

log() { echo "kube-apiserver: $*" >&2; }
die() { echo "kube-apiserver: $*" >&2; exit 1; }

command -v go >/dev/null || die "go is not in PATH"

if [[ -z ${KUBE_VERSION:-} ]]; then
	api=$(awk '$1 == "k8s.io/api" { print $2; exit }' "$here/../go.mod")
	[[ $api =~ ^v0\.([0-9]+)\.([0-9]+)$ ]] || die "go.mod: k8s.io/api version ${api:-missing} is not v0.X.Y"
	KUBE_VERSION="v1.${BASH_REMATCH[1]}.${BASH_REMATCH[2]}"
fi
[[ $KUBE_VERSION =~ ^v1\.([0-9]+)\.([0-9]+)$ ]] || die "KUBE_VERSION $KUBE_VERSION is not v1.X.Y"
KUBE_MINOR=${BASH_REMATCH[1]}
STAGING_VERSION="v0.${BASH_REMATCH[1]}.${BASH_REMATCH[2]}"
BIN_DIR="$CACHE_DIR/kube-apiserver-$KUBE_VERSION/bin"

mkdir -p "$CACHE_DIR"
exec 9>"$CACHE_DIR/.kube-apiserver.lock"
flock 9

# A cached build counts only if both binaries run and report the wanted
# versions (an interrupted build is never moved into place, see below).
have_bins() {
	local out
	out=$("$BIN_DIR/kube-apiserver" --version 2>/dev/null) && [[ $out == "Kubernetes $KUBE_VERSION" ]] || return 1
	out=$("$BIN_DIR/etcd" --version 2>/dev/null) && [[ $out == *"etcd Version: "* ]]
}

if ! have_bins; then
	log "building kube-apiserver $KUBE_VERSION and etcd into $BIN_DIR (first run only: ~10 min of CPU, longer with a cold module cache)"
	tmp="$CACHE_DIR/kube-apiserver-$KUBE_VERSION/bin.tmp.$$"
	work="$CACHE_DIR/kube-apiserver-$KUBE_VERSION/mod.tmp.$$"
	rm -rf "$tmp" "$work"
	mkdir -p "$tmp" "$work"
	trap 'rm -rf "$tmp" "$work"' EXIT
	export GOFLAGS=-mod=mod GOWORK=off CGO_ENABLED=0
	cd "$work"
	go mod init podhost.test/kube-apiserver >/dev/null 2>&1 || die "go mod init failed"
	# The staging modules and the etcd version, from Kubernetes' own go.mod.
	kmod=$(go mod download -json "k8s.io/kubernetes@$KUBE_VERSION" | awk -F'"' '$2 == "GoMod" { print $4 }') ||
		die "go mod download k8s.io/kubernetes@$KUBE_VERSION failed (module proxy unreachable? see above)"
	[[ -f $kmod ]] || die "no go.mod for k8s.io/kubernetes@$KUBE_VERSION"
	staging=$(awk '$2 == "=>" && $3 ~ /^\.\/staging\/src\// { print $1 }' "$kmod")
	[[ -n $staging ]] || die "k8s.io/kubernetes@$KUBE_VERSION go.mod: no staging replace lines"
	etcd_version=$(awk '$1 == "go.etcd.io/etcd/server/v3" { print $2; exit }' "$kmod")
	[[ -n $etcd_version ]] || die "k8s.io/kubernetes@$KUBE_VERSION go.mod: no go.etcd.io/etcd/server/v3"
	{
		echo "require ("
		echo "	k8s.io/kubernetes $KUBE_VERSION"
		echo "	go.etcd.io/etcd/server/v3 $etcd_version"
		echo ")"
		echo "replace ("
		for m in $staging; do echo "	$m => $m $STAGING_VERSION"; done
		echo ")"
	} >>go.mod
	ldflags="-s -w"
	for kv in "gitVersion=$KUBE_VERSION" gitMajor=1 "gitMinor=$KUBE_MINOR" gitTreeState=clean; do
		ldflags+=" -X k8s.io/component-base/version.$kv -X k8s.io/client-go/pkg/version.$kv"
	done
	nice -n 19 go build -trimpath -ldflags "$ldflags" -o "$tmp/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver >&2 ||
		die "go build of kube-apiserver $KUBE_VERSION failed (see above)"
	nice -n 19 go build -trimpath -ldflags "-s -w" -o "$tmp/etcd" go.etcd.io/etcd/server/v3 >&2 ||
		die "go build of etcd $etcd_version failed (see above)"
	cd /
	rm -rf "$BIN_DIR" "$work"
	mv "$tmp" "$BIN_DIR"
	trap - EXIT
	have_bins || die "kube-apiserver $KUBE_VERSION or etcd in $BIN_DIR does not run"
fi
echo "$BIN_DIR"
