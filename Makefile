# podhost. Every target works as root on a fresh Debian machine with Go and
# installs what it needs itself; see docs/testing.md.
#
#   make build             bin/podhost and bin/podhost-log-driver
#   make test              test-unit + test-integration + test-vm
#   make test-unit         go test ./... (no root, no containerd)
#   make test-integration  deps + the integration suite against a private containerd (root)
#   make test-vm           the appliance suite in a Debian VM: systemd, cgroup v2 (scripts/vm/run.sh)
#   make lint              gofmt, go vet, wings (internal/archtest), golangci-lint
#   make bench             footprint/scale table into _output/bench/ (BENCH=re: other benchmarks)
#   make fuzz              every fuzz target for FUZZTIME (default 10s)
#   make run               dev containerd + test image + podhost check, prints next steps

GO ?= go
GOTESTFLAGS ?=
export GOTESTFLAGS

.PHONY: all build test test-unit test-integration test-vm test-vm-smoke lint bench fuzz run run-stop deps image reap clean

all: build

# podhost is static (no cgo: no libc mapped, no pthread stacks) and trimmed
# (docs/decisions.md 16). podhost-log-driver runs once per container (the
# shim's log driver), installed beside podhost: the C one
# (native/podhost-log-driver, $(CC), static) for its footprint, or the Go one
# if there is no C compiler (scripts/build-log-driver.sh; LOG_DRIVER=go
# forces it).
build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags='-s -w' -o bin/podhost ./cmd/podhost
	CC="$(CC)" GO="$(GO)" scripts/build-log-driver.sh bin/podhost-log-driver

# Every suite runs even if an earlier one fails; make test fails if any did.
test:
	@rc=0; $(MAKE) --no-print-directory test-unit || rc=1; \
	$(MAKE) --no-print-directory test-integration || rc=1; \
	$(MAKE) --no-print-directory test-vm || rc=1; \
	exit $$rc
# The VM appliance suite (scripts/vm/: Debian guest, systemd, cgroup v2).
test-vm: build
	scripts/vm/run.sh bin/podhost

# Quick VM check without podhost: cgroup2, containerd, ctr run, reboot.
test-vm-smoke:
	scripts/vm/run.sh --smoke

test-unit:
	$(GO) test $(GOTESTFLAGS) ./...

# Packages with integration-tagged tests are found automatically
# (scripts/lib.sh integration_pkgs); PKGS=./integration narrows the run,
# GOTESTFLAGS="-v -run Smoke" selects tests, INTEGRATION_TIMEOUT (20m).
test-integration:
	scripts/test-integration.sh

lint:
	scripts/lint.sh

bench:
	scripts/bench.sh

fuzz:
	scripts/fuzz.sh

run: build
	scripts/run.sh

run-stop:
	scripts/run.sh stop

deps:
	scripts/deps.sh

# The offline test image podhost.test/busybox:1 as _output/busybox.tar.
image:
	mkdir -p _output
	$(GO) run -tags integration ./internal/testenv/cmd/mkimage -o _output/busybox.tar

# Clean up after integration test binaries that were killed.
reap:
	$(GO) run -tags integration ./internal/testenv/cmd/reap

clean:
	rm -rf bin _output
