#!/usr/bin/env bash
# make lint: gofmt (must list nothing), go vet (with and without the
# integration tag), the wings' import rules (internal/archtest), deadcode
# (golang.org/x/tools/cmd/deadcode -test: no function unreachable from main
# or the tests) and golangci-lint
# (scripts/golangci.yml). The tools are built once with `go install` into the
# cache dir; if that fails (no module proxy), the tool is skipped with a
# note. Every check runs; the exit status says whether any failed.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

GOLANGCI_VERSION=${GOLANGCI_VERSION:-v2.15.0}
DEADCODE_VERSION=${DEADCODE_VERSION:-v0.39.0}
failed=()

# tool NAME VERSION MODULE: the binary's path once installed, "" if it cannot be.
tool() {
	local dir="$CACHE_DIR/tools/$1-$2/bin"
	if [[ ! -x $dir/$1 ]]; then
		echo "lint: installing $1 $2 into $dir (once)" >&2
		mkdir -p "$dir"
		if ! GOBIN="$dir" GOFLAGS=-mod=mod $GO install "$3@$2" >/dev/null 2>"$dir/install.log"; then
			echo "lint: could not install $1 (see $dir/install.log); skipping it" >&2
			rm -f "$dir/$1"
			return
		fi
	fi
	echo "$dir/$1"
}

unformatted=$(find . -name '*.go' -not -path './.git/*' -not -path '*/testdata/*' -not -path './vendor/*' -print0 |
	xargs -0 gofmt -l)
if [[ -n $unformatted ]]; then
	echo "lint: gofmt -w needed on:" >&2
	echo "$unformatted" >&2
	failed+=(gofmt)
fi

$GO vet ./... || failed+=("go vet")
$GO vet -tags integration ./... || failed+=("go vet -tags integration")

# The import rules between the wings of internal/ (docs/ARCHITECTURE.md,
# "Wings"; internal/archtest): imports only point down, every package is in a
# wing, and the core links neither the containerd client (runtime-neutral
# types live in internal/model/runtimeapi) nor bbolt (internal/model/records).
$GO test -count=1 ./internal/archtest || failed+=(wings)

dc=$(tool deadcode "$DEADCODE_VERSION" golang.org/x/tools/cmd/deadcode)
if [[ -n $dc ]]; then
	dead=$("$dc" -test ./... 2>&1)
	if [[ -n $dead ]]; then
		echo "lint: deadcode: unreachable functions:" >&2
		echo "$dead" >&2
		failed+=(deadcode)
	fi
fi

gcl=$(tool golangci-lint "$GOLANGCI_VERSION" github.com/golangci/golangci-lint/v2/cmd/golangci-lint)
if [[ -n $gcl ]]; then
	"$gcl" run --allow-serial-runners --config scripts/golangci.yml ./... || failed+=(golangci-lint)
fi

if ((${#failed[@]})); then
	echo "lint: FAILED: ${failed[*]}" >&2
	exit 1
fi
