#!/usr/bin/env bash
# make fuzz: runs every fuzz target (func FuzzXxx(f *testing.F)) of every
# package for FUZZTIME (default 10s) each; go test runs one target at a time.
# New crashers are written to the package's testdata/fuzz/ and fail the run.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

fuzztime=${FUZZTIME:-10s}
found=0
while read -r dir; do
	[[ -n $dir ]] || continue
	for target in $(grep -ohE '^func Fuzz[A-Za-z0-9_]*\(' "$dir"/*_test.go | sed -E 's/^func (Fuzz[A-Za-z0-9_]*)\(/\1/' | sort -u); do
		found=1
		echo "fuzz: $dir $target ($fuzztime)"
		$GO test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "$dir"
	done
done < <(pkgs_with Fuzz $($GO list -f '{{.Dir}}' ./... | sed "s|^$REPO_ROOT|.|"))
((found)) || echo "fuzz: no fuzz targets found"
