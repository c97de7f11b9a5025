#!/usr/bin/env bash
# make run: a development podhost on this machine, in dirs of its own, so it
# never touches an installed podhost (/etc/podhost, /var/lib/podhost).
#
#   scripts/run.sh          set up (idempotent), run `podhost check`, print
#                           the next steps
#   scripts/run.sh stop     stop the dev containerd this script started
#
# What it sets up:
#   - dependencies (scripts/deps.sh) and bin/podhost (make build)
#   - the offline test image podhost.test/busybox:1 (_output/busybox.tar)
#   - containerd: the system one if /run/containerd/containerd.sock answers,
#     else a dev containerd from the test cache ($RUN_DIR/containerd.sock,
#     data in $DEV_DIR/containerd, log $DEV_DIR/containerd.log)
#   - the test image imported into containerd namespace "podhost"
#   - $DEV_DIR/config.yaml pointing podhost at all of the above
# PODHOST_DEV_DIR (default /var/lib/podhost-dev) and PODHOST_DEV_RUN_DIR
# (default /run/podhost-dev) move it.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

DEV_DIR=${PODHOST_DEV_DIR:-/var/lib/podhost-dev}
RUN_DIR=${PODHOST_DEV_RUN_DIR:-/run/podhost-dev}
NAMESPACE=podhost
CD_CONFIG="$DEV_DIR/containerd/config.toml"
CD_SOCK="$RUN_DIR/containerd.sock"
CD_PIDFILE="$RUN_DIR/containerd.pid"
SYSTEM_SOCK=/run/containerd/containerd.sock

log() { echo "run: $*" >&2; }
die() { echo "run: $*" >&2; exit 1; }

[[ $(id -u) == 0 ]] || die "must run as root"

# dev_containerd_pid prints the PID of the dev containerd if it runs.
dev_containerd_pid() {
	local pid
	[[ -f $CD_PIDFILE ]] || return 1
	pid=$(<"$CD_PIDFILE")
	[[ $pid =~ ^[0-9]+$ ]] || return 1
	# The PID must still be our containerd (not a reused PID).
	local cmdline
	cmdline=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) || return 1
	[[ $cmdline == *"--config $CD_CONFIG "* ]] || return 1
	echo "$pid"
}

if [[ ${1:-} == stop ]]; then
	if pid=$(dev_containerd_pid); then
		log "stopping dev containerd (pid $pid); containers keep running in their shims"
		kill -TERM "$pid"
		tail --pid="$pid" -f /dev/null
		rm -f "$CD_PIDFILE"
	else
		log "dev containerd is not running"
	fi
	exit 0
fi

bin_dir=$(scripts/deps.sh | tail -n1)
# ctr: quiet (containerd's deprecation warnings) unless it fails.
ctr() {
	local err rc=0
	err=$(mktemp)
	"$bin_dir/ctr" "$@" 2>"$err" || rc=$?
	((rc == 0)) || cat "$err" >&2
	rm -f "$err"
	return $rc
}
[[ -x bin/podhost ]] || $GO build -o bin/podhost ./cmd/podhost

mkdir -p _output
$GO run -tags integration ./internal/testenv/cmd/mkimage -o _output/busybox.tar 2>/dev/null
image_ref=podhost.test/busybox:1

if [[ -S $SYSTEM_SOCK ]] && ctr --address "$SYSTEM_SOCK" version >/dev/null 2>&1; then
	address=$SYSTEM_SOCK
	log "using the system containerd at $address"
else
	address=$CD_SOCK
	if ! dev_containerd_pid >/dev/null; then
		mkdir -p "$DEV_DIR/containerd" "$RUN_DIR"
		cat >"$CD_CONFIG" <<-EOF
			# podhost dev containerd, written by scripts/run.sh
			version = 3
			root = "$DEV_DIR/containerd/root"
			state = "$RUN_DIR/containerd/state"
			disabled_plugins = ["io.containerd.grpc.v1.cri", "io.containerd.cri.v1.runtime", "io.containerd.cri.v1.images", "io.containerd.podsandbox.controller.v1.podsandbox", "io.containerd.nri.v1.nri"]
			[grpc]
			  address = "$CD_SOCK"
			[ttrpc]
			  address = "$CD_SOCK.ttrpc"
			[debug]
			  address = ""
			[metrics]
			  address = ""
			[plugins."io.containerd.internal.v1.opt"]
			  path = "$DEV_DIR/containerd/opt"
		EOF
		log "starting a dev containerd at $CD_SOCK (log $DEV_DIR/containerd.log)"
		PATH="$bin_dir:$PATH" setsid "$bin_dir/containerd" --config "$CD_CONFIG" \
			>>"$DEV_DIR/containerd.log" 2>&1 </dev/null &
		echo $! >"$CD_PIDFILE"
		# containerd answers within a second; give it 30.
		for _ in $(seq 300); do
			ctr --address "$CD_SOCK" version >/dev/null 2>&1 && break
			dev_containerd_pid >/dev/null || die "dev containerd exited; see $DEV_DIR/containerd.log"
			sleep 0.1
		done
		ctr --address "$CD_SOCK" version >/dev/null || die "dev containerd does not answer; see $DEV_DIR/containerd.log"
	fi
fi

images=$(ctr --address "$address" --namespace "$NAMESPACE" images ls -q)
if ! grep -qxF "$image_ref" <<<"$images"; then
	log "importing $image_ref into containerd namespace $NAMESPACE"
	ctr --address "$address" --namespace "$NAMESPACE" images import _output/busybox.tar >/dev/null
fi

config="$DEV_DIR/config.yaml"
mkdir -p "$DEV_DIR/manifests" "$DEV_DIR/cni/net.d"
chmod 0755 "$DEV_DIR/manifests"
cat >"$config" <<EOF
# podhost dev config, written by scripts/run.sh (see manifests/config.yaml)
manifestDir: $DEV_DIR/manifests
stateDir: $DEV_DIR/state
logDir: $DEV_DIR/logs
runDir: $RUN_DIR/podhost
socket: $RUN_DIR/podhost.sock
containerdAddress: $address
namespace: $NAMESPACE
cniConfDir: $DEV_DIR/cni/net.d
cniBinDirs: [/usr/lib/cni, /opt/cni/bin]
EOF

ph="bin/podhost --config $config"
echo
echo "== $ph check"
check_rc=0
$ph check || check_rc=$?
echo

cat <<EOF
Dev environment ready: containerd $address, namespace $NAMESPACE, config $config.
Next steps:
EOF
if bin/podhost daemon --help >/dev/null 2>&1; then
	cat <<EOF
  $ph daemon                                          # in another terminal
  $ph apply -f manifests/examples/web.yaml --wait
  $ph get pods -o wide
  wget -qO- http://127.0.0.1:18080/                   # served by the web pod
  $ph logs web -c sidecar -f
  $ph delete web
EOF
else
	cat <<EOF
  (bin/podhost has no 'daemon' command yet; once it has:)
  $ph daemon
  $ph apply -f manifests/examples/web.yaml --wait
EOF
	echo "  $ph apply -f manifests/examples/ --dry-run       # validates the examples today"
fi
echo "  scripts/run.sh stop                                  # stop the dev containerd (make run-stop)"
exit $check_rc
