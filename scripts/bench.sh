#!/usr/bin/env bash
# make bench: every benchmark, with allocations. Unit benchmarks first, then
# the integration benchmarks (root; private containerd per package, -p 1),
# if any package has them. BENCH (default .) and BENCHTIME select/limit.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

bench=${BENCH:-.}
args=(-run '^$' -bench "$bench" -benchmem)
[[ -n ${BENCHTIME:-} ]] && args+=(-benchtime "$BENCHTIME")

$GO test "${args[@]}" ./...

# shellcheck disable=SC2046
pkgs=$(pkgs_with Benchmark $(integration_pkgs))
if [[ -n $pkgs ]]; then
	scripts/deps.sh >/dev/null
	rc=0
	# shellcheck disable=SC2086
	$GO test -tags integration -p 1 -count=1 -timeout 30m "${args[@]}" $pkgs || rc=$?
	$GO run -tags integration ./internal/testenv/cmd/reap || rc=$((rc ? rc : 1))
	exit $rc
fi
