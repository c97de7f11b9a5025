#!/usr/bin/env bash
# Installs the OCI registry podhost's registry tests pull from
# (github.com/distribution/distribution/v3, cmd/registry), built with
# `go install` into the test cache dir that scripts/deps.sh uses:
#   $PODHOST_CACHE_DIR (default /var/cache/podhost-test)/registry-<ver>/bin
# Idempotent and silent when the binary is in place; safe to run
# concurrently (flock). Prints the registry binary's path as the last
# stdout line. scripts/deps.sh runs it (and internal/testenv, which then
# only finds the binary).
set -euo pipefail

REGISTRY_VERSION=${REGISTRY_VERSION:-v3.1.2}
CACHE_DIR=${PODHOST_CACHE_DIR:-/var/cache/podhost-test}
BIN_DIR="$CACHE_DIR/registry-$REGISTRY_VERSION/bin"

log() { echo "registry: $*" >&2; }
die() { echo "registry: $*" >&2; exit 1; }

command -v go >/dev/null || die "go is not in PATH"

mkdir -p "$CACHE_DIR"
exec 9>"$CACHE_DIR/.registry.lock"
flock 9

# A cached build counts only if it runs and reports the wanted version
# (`go install pkg@ver` builds report "<ver>+unknown"; an interrupted build
# is never moved into place, see below).
have_registry() {
	local out
	out=$("$BIN_DIR/registry" --version 2>/dev/null) && [[ $out == *" $REGISTRY_VERSION"* ]]
}

if ! have_registry; then
	log "building registry $REGISTRY_VERSION into $BIN_DIR (first run only: ~2 min of CPU, longer with a cold module cache)"
	tmp="$CACHE_DIR/registry-$REGISTRY_VERSION/bin.tmp.$$"
	rm -rf "$tmp"
	mkdir -p "$tmp"
	trap 'rm -rf "$tmp"' EXIT
	# Static, no cgo. `pkg@version` ignores the current module, so podhost's
	# go.mod is untouched.
	GOBIN="$tmp" GOFLAGS=-mod=mod CGO_ENABLED=0 go install \
		"github.com/distribution/distribution/v3/cmd/registry@$REGISTRY_VERSION" >&2 ||
		die "go install of registry $REGISTRY_VERSION failed (module proxy unreachable? see above)"
	rm -rf "$BIN_DIR"
	mv "$tmp" "$BIN_DIR"
	trap - EXIT
	have_registry || die "registry $REGISTRY_VERSION in $BIN_DIR does not run"
fi
echo "$BIN_DIR/registry"
