#!/usr/bin/env bash
# make bench: every benchmark, with allocations. Unit benchmarks first, then
# the integration benchmarks (root; private containerd per package, -p 1),
# if any integration package has them. BENCH (default .) selects benchmarks,
# BENCHTIME (e.g. 1x, 2s) limits them. Both parts run; either failing fails.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

args=(-run '^$' -bench "${BENCH:-.}" -benchmem)
[[ -n ${BENCHTIME:-} ]] && args+=(-benchtime "$BENCHTIME")

rc=0
$GO test "${args[@]}" ./... || rc=1

# shellcheck disable=SC2046
pkgs=$(pkgs_with Benchmark $(integration_pkgs))
if [[ -n $pkgs ]]; then
	scripts/deps.sh >/dev/null || exit 1
	# shellcheck disable=SC2086
	$GO test -tags integration -p 1 -count=1 -timeout 30m "${args[@]}" $pkgs || rc=1
	$GO run -tags integration ./internal/testenv/cmd/reap || rc=1
fi
exit $rc
