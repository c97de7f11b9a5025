# Shared helpers for podhost's scripts. Source it: . "$(dirname "$0")/lib.sh"
# It cds to the repo root.

cd "$(dirname "${BASH_SOURCE[0]}")/.."
REPO_ROOT=$PWD
CACHE_DIR=${PODHOST_CACHE_DIR:-/var/cache/podhost-test}
GO=${GO:-go}

# integration_pkgs prints the packages that have integration-tagged tests
# (a `//go:build ... integration ...` line in a _test.go file), as ./dir
# patterns, one per line. New integration tests anywhere are picked up
# without touching the Makefile.
integration_pkgs() {
	grep -rlE --include='*_test.go' --exclude-dir=.git --exclude-dir=testdata --exclude-dir=vendor \
		'^//go:build .*\bintegration\b' . |
		xargs -r -n1 dirname | sort -u
}

# pkgs_with FUNCPREFIX DIR... prints the dirs among DIR... whose test files
# declare a func starting with FUNCPREFIX (Benchmark, Fuzz).
pkgs_with() {
	local prefix=$1
	shift
	local d
	for d in "$@"; do
		if grep -qE "^func ${prefix}[A-Z0-9_]" "$d"/*_test.go 2>/dev/null; then
			echo "$d"
		fi
	done
}
