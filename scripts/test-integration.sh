#!/usr/bin/env bash
# make test-integration: installs the dependencies (scripts/deps.sh), then
# runs every package with integration-tagged tests (see integration_pkgs in
# lib.sh) as root, one package at a time, then reaps whatever a killed test
# binary may have left (testenv cmd/reap).
#   INTEGRATION_TIMEOUT (default 35m: the suite takes about 8 min on an idle 2-core machine and 19 min on one at load 10), GOTESTFLAGS (e.g. "-v -run Smoke"),
#   PKGS (default: all integration packages).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

[[ $(id -u) == 0 ]] || { echo "test-integration: must run as root" >&2; exit 1; }
scripts/deps.sh >/dev/null

# One suite at a time on a machine: a second run (another checkout, another
# terminal) waits for the first, saying so. The suites' Envs are isolated
# (namespaces, dirs, cgroups, bridges, subnets, kernel-picked ports), but two
# at once on 2 cores would turn the timing of both into a lottery. A `make
# run` dev podhost is not a suite: it never waits here, nor makes a run wait.
lock=/run/podhost-test-integration.lock
exec 8>>"$lock"
if ! flock -n 8; then
	echo "test-integration: another integration run holds $lock (pid $(cat "$lock.pid" 2>/dev/null || echo '?')); waiting for it to finish" >&2
	flock 8
	echo "test-integration: the other run finished; starting" >&2
fi
echo $$ >"$lock.pid"

pkgs=${PKGS:-$(integration_pkgs)}
if [[ -z $pkgs ]]; then
	echo "test-integration: no integration tests found" >&2
	exit 1
fi
rc=0
# -p 1: one test binary (one private containerd) at a time; the CNI test
# networks and hostPorts of the suites are not meant to run side by side.
# shellcheck disable=SC2086
$GO test -tags integration -p 1 -count=1 -timeout "${INTEGRATION_TIMEOUT:-35m}" ${GOTESTFLAGS:-} $pkgs || rc=$?
$GO run -tags integration ./internal/testenv/cmd/reap || rc=$((rc ? rc : 1))
exit $rc
