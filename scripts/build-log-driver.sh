#!/usr/bin/env bash
# Builds the per-container log driver into OUT (make build: bin/podhost-log-driver).
#
#   scripts/build-log-driver.sh OUT
#
#   LOG_DRIVER=auto (default)  the C driver (native/podhost-log-driver) with
#                              $CC (default cc); without a C compiler, the Go
#                              driver (cmd/podhost-log-driver), saying so
#   LOG_DRIVER=c               the C driver or fail
#   LOG_DRIVER=go              the Go driver (the reference implementation)
#
# The C driver is linked statically (-static): with 30 copies running that is
# ~107 KiB PSS each against ~158 KiB dynamically linked (ld.so's and libc's
# relocated data are private pages in every process); it falls back to a
# dynamic link if the toolchain has no static libc. docs/decisions.md, 13.
set -euo pipefail
out=${1:?usage: scripts/build-log-driver.sh OUT}
[[ $out == /* ]] || out="$PWD/$out"
. "$(dirname "$0")/lib.sh"
want=${LOG_DRIVER:-auto}
CC=${CC:-cc}
CFLAGS=${LOG_DRIVER_CFLAGS:--O2 -Wall -Wextra -Werror -std=gnu11 -D_FORTIFY_SOURCE=2}
src=(native/podhost-log-driver/log_driver.c native/podhost-log-driver/args.c)

build_go() {
	$GO build -trimpath -ldflags='-s -w' -o "$out" ./cmd/podhost-log-driver
}

build_c() {
	# shellcheck disable=SC2086 # CFLAGS is a list of flags
	$CC $CFLAGS -s -static -o "$out" "${src[@]}" 2>/dev/null ||
		$CC $CFLAGS -s -o "$out" "${src[@]}"
}

mkdir -p "$(dirname "$out")"
case $want in
go) build_go ;;
c) build_c ;;
auto)
	if command -v "$CC" >/dev/null; then
		build_c
	else
		echo "build-log-driver: no C compiler ($CC): building the Go log driver instead (~0.8 MiB PSS per container instead of ~0.1)" >&2
		build_go
	fi
	;;
*) echo "build-log-driver: LOG_DRIVER=$want: want auto, c or go" >&2 && exit 2 ;;
esac
