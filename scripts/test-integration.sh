#!/usr/bin/env bash
# make test-integration: installs the dependencies (scripts/deps.sh), then
# runs every package with integration-tagged tests (see integration_pkgs in
# lib.sh) as root, one package at a time, then reaps whatever a killed test
# binary may have left (testenv cmd/reap).
#   INTEGRATION_TIMEOUT (default 20m), GOTESTFLAGS (e.g. "-v -run Smoke"),
#   PKGS (default: all integration packages).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

[[ $(id -u) == 0 ]] || { echo "test-integration: must run as root" >&2; exit 1; }
scripts/deps.sh >/dev/null

pkgs=${PKGS:-$(integration_pkgs)}
if [[ -z $pkgs ]]; then
	echo "test-integration: no integration tests found" >&2
	exit 1
fi
rc=0
# -p 1: one test binary (one private containerd) at a time; the CNI test
# networks and hostPorts of the suites are not meant to run side by side.
# shellcheck disable=SC2086
$GO test -tags integration -p 1 -count=1 -timeout "${INTEGRATION_TIMEOUT:-20m}" ${GOTESTFLAGS:-} $pkgs || rc=$?
$GO run -tags integration ./internal/testenv/cmd/reap || rc=$((rc ? rc : 1))
exit $rc
