#!/usr/bin/env bash
# make lint: gofmt (must list nothing), go vet (with and without the
# integration tag), and golangci-lint (scripts/golangci.yml) when it can be
# installed: it is built once with `go install` into the cache dir; if that
# fails (no module proxy), it is skipped with a note. Every check runs; the
# exit status says whether any failed.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

GOLANGCI_VERSION=${GOLANGCI_VERSION:-v2.15.0}
failed=()

unformatted=$(find . -name '*.go' -not -path './.git/*' -not -path '*/testdata/*' -not -path './vendor/*' -print0 |
	xargs -0 gofmt -l)
if [[ -n $unformatted ]]; then
	echo "lint: gofmt -w needed on:" >&2
	echo "$unformatted" >&2
	failed+=(gofmt)
fi

$GO vet ./... || failed+=("go vet")
$GO vet -tags integration ./... || failed+=("go vet -tags integration")

gcl_dir="$CACHE_DIR/tools/golangci-lint-$GOLANGCI_VERSION/bin"
gcl="$gcl_dir/golangci-lint"
if [[ ! -x $gcl ]]; then
	echo "lint: installing golangci-lint $GOLANGCI_VERSION into $gcl_dir (once)" >&2
	mkdir -p "$gcl_dir"
	if ! GOBIN="$gcl_dir" GOFLAGS=-mod=mod $GO install \
		"github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$GOLANGCI_VERSION" >/dev/null 2>"$gcl_dir/install.log"; then
		echo "lint: could not install golangci-lint (see $gcl_dir/install.log); skipping it" >&2
		rm -f "$gcl"
	fi
fi
if [[ -x $gcl ]]; then
	"$gcl" run --config scripts/golangci.yml ./... || failed+=(golangci-lint)
fi

if ((${#failed[@]})); then
	echo "lint: FAILED: ${failed[*]}" >&2
	exit 1
fi
