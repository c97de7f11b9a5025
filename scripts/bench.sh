#!/usr/bin/env bash
# make bench: the footprint and scale table (integration/footprint_bench_test.go,
# root, private containerd): for N in BENCH_N (default 1,30,100,250) podhost's
# cold start vs the floor (the same netns + CNI ADD + containers + tasks
# straight through the containerd client, in parallel, same run; medians of
# 3 runs alternating floor and podhost up to N=100, one run above), add→running
# and remove→gone of one pod vs the floor, containerd RSS, podhost RSS right
# after the cold start and BENCH_SETTLE (30s) later; at N=30 the per-pod
# helper PSS (shim / log driver, and the old re-executed podhost as log
# driver), podhost's idle CPU over BENCH_IDLE (60s) twice (the second window:
# settled) and its RSS after them; the CPU each cold start used (machine,
# containerd, podhost or the bench). Prints the table
# and writes _output/bench/footprint.{json,txt}. BENCH_LOG=/abs/prefix also
# writes each N's daemon log (debug level) to <prefix>.<N>. podhost's run
# dir and containerd's state are on tmpfs, as /run on an appliance
# (PODHOST_TEST_RUN_TMPFS=: on the test dir's filesystem).
#
# Then the kube API with 250 pods (BenchmarkKubeAPI) and a boot with 10
# images preloaded in the images dir, cold and warm, against ctr images
# import of the same archives (BenchmarkImagesDirBoot), and 30 pods on a box
# joined to a private kube-apiserver: the daemon before and after
# podhost-cluster joins, and podhost-cluster itself (BenchmarkClusterFootprint).
#
# BENCH=<regexp> runs the other benchmarks instead, the old way: unit
# benchmarks, then the integration ones (BENCHTIME e.g. 1x, 2s).
set -uo pipefail
. "$(dirname "$0")/lib.sh"

if [[ -n ${BENCH:-} ]]; then
	args=(-run '^$' -bench "$BENCH" -benchmem)
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
fi

scripts/deps.sh >/dev/null || exit 1
out="$PWD/_output/bench"
mkdir -p "$out"
rm -f "$out/footprint.json" "$out/footprint.txt"
rc=0
# The runtime dirs as shipped: podhost's run dir and containerd's state
# live in /run, a tmpfs on every systemd machine (testenv mounts one on
# each; PODHOST_TEST_RUN_TMPFS= keeps them on the test dir's filesystem).
BENCH_N=${BENCH_N:-1,30,100,250} BENCH_OUT="$out/footprint" PODHOST_TEST_RUN_TMPFS=${PODHOST_TEST_RUN_TMPFS-1} \
	$GO test -tags integration -p 1 -count=1 -timeout 20m -run '^$' -bench '^BenchmarkFootprint$' -benchtime 1x ./integration || rc=1
# The kube API with 250 pods: kubectl get vs podhost get, 100 watches.
rm -f "$out/footprint.kubeapi.json" "$out/footprint.kubeapi.txt"
BENCH_OUT="$out/footprint" PODHOST_TEST_RUN_TMPFS=${PODHOST_TEST_RUN_TMPFS-1} \
	$GO test -tags integration -p 1 -count=1 -timeout 20m -run '^$' -bench '^BenchmarkKubeAPI$' -benchtime 1x ./integration || rc=1
# A boot with 10 images preloaded in the images dir, cold and warm, vs ctr images import.
rm -f "$out/footprint.imagesdir.json" "$out/footprint.imagesdir.txt"
BENCH_OUT="$out/footprint" PODHOST_TEST_RUN_TMPFS=${PODHOST_TEST_RUN_TMPFS-1} \
	$GO test -tags integration -p 1 -count=1 -timeout 20m -run '^$' -bench '^BenchmarkImagesDirBoot$' -benchtime 1x ./integration || rc=1
# A box joined to a private kube-apiserver: the daemon standalone vs joined, podhost-cluster.
rm -f "$out/footprint.cluster.json" "$out/footprint.cluster.txt"
BENCH_OUT="$out/footprint" PODHOST_TEST_RUN_TMPFS=${PODHOST_TEST_RUN_TMPFS-1} \
	$GO test -tags integration -p 1 -count=1 -timeout 20m -run '^$' -bench '^BenchmarkClusterFootprint$' -benchtime 1x ./integration || rc=1
$GO run -tags integration ./internal/testenv/cmd/reap || rc=1
[[ -f $out/footprint.cluster.txt ]] && cat "$out/footprint.cluster.txt"
[[ -f $out/footprint.kubeapi.txt ]] && cat "$out/footprint.kubeapi.txt"
[[ -f $out/footprint.imagesdir.txt ]] && cat "$out/footprint.imagesdir.txt"
if [[ -f $out/footprint.txt ]]; then
	cat "$out/footprint.txt"
	echo "bench: wrote $out/footprint.json"
else
	echo "bench: no table written" >&2
	rc=1
fi
exit $rc
