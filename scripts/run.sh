#!/usr/bin/env bash
# make run: a development podhost on this machine, in dirs of its own, so it
# never touches an installed podhost (/etc/podhost, /var/lib/podhost).
#
#   scripts/run.sh          set up (idempotent): containerd, test image,
#                           `podhost check`, the podhost daemon, the example
#                           pods (manifests/examples); prints `get pods` and
#                           the next steps
#   scripts/run.sh stop     delete every pod of the dev podhost, stop the
#                           daemon and the dev containerd this script started,
#                           remove its bridge, pod cgroups and run dir
#                           (make run-stop); state and logs stay in $DEV_DIR
#
# What it sets up:
#   - dependencies (scripts/deps.sh) and bin/podhost (make build)
#   - the offline test image podhost.test/busybox:1 (_output/busybox.tar)
#   - containerd: the system one if /run/containerd/containerd.sock answers,
#     else a dev containerd from the test cache ($RUN_DIR/containerd.sock,
#     data in $DEV_DIR/containerd, log $DEV_DIR/containerd.log)
#   - the test image imported into containerd namespace "podhost-dev"
#   - a CNI network of its own (bridge podhost-dev0, 10.87.0.0/16) and the
#     pod cgroup parent podhost-dev
#   - $DEV_DIR/config.yaml pointing podhost at all of the above
#   - `podhost daemon` in the background (log $DEV_DIR/podhost.log), API
#     socket $RUN_DIR/podhost.sock
# PODHOST_DEV_DIR (default /var/lib/podhost-dev) and PODHOST_DEV_RUN_DIR
# (default /run/podhost-dev) move it. RUN_EXAMPLES=0 skips the examples.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

DEV_DIR=${PODHOST_DEV_DIR:-/var/lib/podhost-dev}
RUN_DIR=${PODHOST_DEV_RUN_DIR:-/run/podhost-dev}
# Names of its own, so a dev podhost never shares anything host-global with
# an installed podhost (namespace podhost, cgroup parent podhost, bridge
# podhost0 on 10.89.0.0/16) or with the integration suites (10.90.x.0/24).
NAMESPACE=podhost-dev
CGROUP_PARENT=podhost-dev
BRIDGE=podhost-dev0
SUBNET=10.87.0.0/16
CD_CONFIG="$DEV_DIR/containerd/config.toml"
CD_SOCK="$RUN_DIR/containerd.sock"
CD_PIDFILE="$RUN_DIR/containerd.pid"
PH_PIDFILE="$RUN_DIR/podhost.pid"
CONFIG="$DEV_DIR/config.yaml"
SYSTEM_SOCK=/run/containerd/containerd.sock

log() { echo "run: $*" >&2; }
die() { echo "run: $*" >&2; exit 1; }

[[ $(id -u) == 0 ]] || die "must run as root"

# running_pid PIDFILE NEEDLE prints the PID in PIDFILE if that process runs
# and its command line contains NEEDLE (so a reused PID never matches).
running_pid() {
	local pid cmdline
	[[ -f $1 ]] || return 1
	pid=$(<"$1")
	[[ $pid =~ ^[0-9]+$ ]] || return 1
	cmdline=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) || return 1
	[[ $cmdline == *"$2"* ]] || return 1
	echo "$pid"
}
dev_containerd_pid() { running_pid "$CD_PIDFILE" "--config $CD_CONFIG "; }
daemon_pid() { running_pid "$PH_PIDFILE" "--config $CONFIG daemon"; }

# stop_pid PID: SIGTERM, then wait until it has exited.
stop_pid() {
	kill -TERM "$1" 2>/dev/null || return 0
	tail --pid="$1" -f /dev/null
}

ph() { bin/podhost --config "$CONFIG" "$@"; }

# wait_until SECONDS CMD...: run CMD until it succeeds. (It polls: from a
# shell there is no event to wait on for "the daemon's API answers".)
wait_until() {
	local deadline=$((SECONDS + $1))
	shift
	until "$@" >/dev/null 2>&1; do
		((SECONDS < deadline)) || return 1
		sleep 0.2
	done
}

# remove_cgroup_tree: the dev instance's pod cgroup parent in every
# cgroup hierarchy, deepest first. rmdir removes only empty cgroups, so
# nothing that still runs is touched; only this instance's own parent.
remove_cgroup_tree() {
	local d
	for d in /sys/fs/cgroup/"$CGROUP_PARENT" /sys/fs/cgroup/*/"$CGROUP_PARENT"; do
		[[ -d $d ]] || continue
		find "$d" -depth -type d -exec rmdir {} \; 2>/dev/null || true
		[[ -d $d ]] && log "cgroup $d is not empty; left in place"
	done
	return 0
}

if [[ ${1:-} == stop ]]; then
	if pid=$(daemon_pid); then
		# Every pod of the dev podhost, the examples and what the user
		# applied: a removed manifest is a deleted pod.
		log "deleting every pod of the dev podhost"
		find "$DEV_DIR/manifests" -maxdepth 1 -type f -delete
		# Gone means gone from containerd, not only from podhost's list.
		address=$(sed -n 's/^containerdAddress: //p' "$CONFIG")
		ctr=$(scripts/deps.sh --run | tail -n1)/ctr
		no_containers() {
			[[ -z $(ph get pods -A -o name 2>/dev/null) ]] &&
				[[ -z $("$ctr" --address "$address" --namespace "$NAMESPACE" containers ls -q 2>/dev/null) ]]
		}
		wait_until 120 no_containers || log "pods still there after 120s; stopping anyway"
		log "stopping podhost daemon (pid $pid)"
		stop_pid "$pid"
		rm -f "$PH_PIDFILE"
	else
		log "podhost daemon is not running"
	fi
	if pid=$(dev_containerd_pid); then
		log "stopping dev containerd (pid $pid)"
		stop_pid "$pid"
		rm -f "$CD_PIDFILE"
	else
		log "dev containerd is not running"
	fi
	# What the dev instance made on the host, all of it its own: the bridge
	# (the CNI bridge plugin never removes one), the pod cgroup parent and
	# the run dir. Persistent state and logs stay in $DEV_DIR.
	if [[ -e /sys/class/net/$BRIDGE ]]; then
		if [[ -n $(ls /sys/class/net/$BRIDGE/brif 2>/dev/null) ]]; then
			log "bridge $BRIDGE still has ports; left in place"
		else
			ip link del "$BRIDGE" || log "could not delete bridge $BRIDGE"
		fi
	fi
	remove_cgroup_tree
	if grep -q " $RUN_DIR[/ ]" /proc/self/mountinfo; then
		log "$RUN_DIR still has mounts; left in place"
	else
		rm -rf "$RUN_DIR"
	fi
	exit 0
fi

bin_dir=$(scripts/deps.sh --run | tail -n1)
# ctr: quiet (containerd's deprecation warnings) unless it fails.
ctr() {
	local err rc=0
	err=$(mktemp)
	"$bin_dir/ctr" "$@" 2>"$err" || rc=$?
	((rc == 0)) || cat "$err" >&2
	rm -f "$err"
	return $rc
}
[[ -x bin/podhost ]] || CGO_ENABLED=0 $GO build -trimpath -ldflags="-s -w" -o bin/podhost ./cmd/podhost

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

mkdir -p "$DEV_DIR/manifests" "$DEV_DIR/cni/net.d" "$RUN_DIR"
chmod 0755 "$DEV_DIR/manifests"
# The shipped default network, under the dev instance's own names.
sed -e "s|\"name\": \"podhost\"|\"name\": \"$NAMESPACE\"|" -e "s|\"podhost0\"|\"$BRIDGE\"|" \
	-e "s|10.89.0.0/16|$SUBNET|" -e "s|/run/podhost/cni/networks|$RUN_DIR/podhost/cni/networks|" \
	manifests/cni/10-podhost.conflist >"$DEV_DIR/cni/net.d/10-podhost-dev.conflist"
cat >"$CONFIG" <<EOF
# podhost dev config, written by scripts/run.sh (see manifests/config.yaml)
manifestDir: $DEV_DIR/manifests
stateDir: $DEV_DIR/state
logDir: $DEV_DIR/logs
runDir: $RUN_DIR/podhost
socket: $RUN_DIR/podhost.sock
containerdAddress: $address
namespace: $NAMESPACE
cgroupParent: $CGROUP_PARENT
cniConfDir: $DEV_DIR/cni/net.d
cniBinDirs: [/usr/lib/cni, /opt/cni/bin]
EOF
# Image GC watches the filesystem of containerd's root: the dev one's.
[[ $address == "$CD_SOCK" ]] && echo "imageFSPath: $DEV_DIR/containerd/root" >>"$CONFIG"
# The kubelet's eviction thresholds but for the disks, at 5 %: a developer's
# disk is often fuller than the 85 % (imagefs) that would put the dev node
# under DiskPressure, evicting and refusing the examples (docs/eviction.md).
echo "evictionHard: {memory.available: 100Mi, nodefs.available: 5%, nodefs.inodesFree: 5%, imagefs.available: 5%}" >>"$CONFIG"

echo "== podhost check"
ph check || die "podhost check failed"
echo

if pid=$(daemon_pid); then
	log "podhost daemon already runs (pid $pid)"
else
	log "starting podhost daemon (log $DEV_DIR/podhost.log)"
	setsid bin/podhost --config "$CONFIG" daemon >>"$DEV_DIR/podhost.log" 2>&1 </dev/null &
	echo $! >"$PH_PIDFILE"
	api_up() { daemon_pid >/dev/null && ph get pods; }
	wait_until 60 api_up || die "podhost daemon did not come up; see $DEV_DIR/podhost.log"
fi

if [[ ${RUN_EXAMPLES:-1} != 0 ]]; then
	log "applying manifests/examples (waiting until web is ready)"
	ph apply -f manifests/examples/ >/dev/null
	ph apply -f manifests/examples/web.yaml --wait=2m >/dev/null ||
		log "web did not become ready within 2m; see $DEV_DIR/podhost.log"
fi
echo
echo "== podhost get pods -o wide"
ph get pods -o wide
echo

cat <<EOF
Dev podhost runs: config $CONFIG, containerd $address (namespace $NAMESPACE),
daemon log $DEV_DIR/podhost.log. Try:
  alias ph='bin/podhost --config $CONFIG'
  ph get pods -o wide
  wget -qO- http://127.0.0.1:18080/            # served by the web pod
  ph logs web -c sidecar -f
  ph describe pod batch
  ph logs hello
  ph logs batch --previous
  ph delete web
  make run-stop                               # delete every dev pod, stop daemon and dev containerd
EOF
