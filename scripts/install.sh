#!/usr/bin/env bash
# Installs podhost on a systemd machine or into an image being built.
#
#   scripts/install.sh [--root DIR] [--start] [--no-enable] [BINARY]
#
#   BINARY       the podhost binary (default: ./bin/podhost, then bin/podhost
#                next to this script's parent dir, i.e. the repo or release root);
#                podhost-log-driver, podhost-pause and podhost-cluster are taken from the same directory
#   --root DIR   install into DIR instead of / (image builders; DESTDIR=DIR works
#                too). Nothing is started; the unit is enabled offline.
#   --start      on a running system: (re)start podhost.service after installing.
#                Pods keep running across the restart (podhost adopts them).
#   --no-enable  do not enable podhost.service
#
# What it does (idempotent; run it again to upgrade):
#   /usr/local/bin/podhost                    the binary (replaced atomically)
#   /usr/local/bin/podhost-log-driver         the per-container log driver the
#                                             shims run (podhost finds it beside itself)
#   /usr/local/bin/podhost-cluster            joins the node to a Kubernetes cluster
#                                             (docs/cluster.md), if built
#   /usr/local/bin/podhost-pause              PID 1 of pods with shareProcessNamespace
#   /etc/systemd/system/podhost.service       from manifests/systemd/podhost.service
#   /etc/systemd/system/podhost-cluster.service  installed, not enabled: enable it once
#                                             cluster.kubeconfig is set (standalone is the default)
#   /etc/podhost/config.yaml     0600 root    from manifests/config.yaml, only if absent
#                                             (it may hold manifestURLHeaders tokens; an
#                                             existing one readable by others is made 0600)
#   /etc/podhost/manifests       0755 root    static pods: every *.yaml/*.json here runs
#   /etc/podhost/cni/net.d       0755         podhost's CNI config (default conflist is written by podhost)
#   /var/lib/podhost             0700         state (state.db)
#   /var/log/pods                0755         container logs
#   systemctl daemon-reload + enable podhost.service (systemctl --root offline)
# containerd (containerd.service), runc and the CNI plugins must be installed
# separately; a warning names any that are missing.
set -euo pipefail

src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
root=${DESTDIR:-/}
start=0
enable=1
bin=""
while (($#)); do
	case $1 in
	--root) root=$2 && shift ;;
	--root=*) root=${1#--root=} ;;
	--start) start=1 ;;
	--no-enable) enable=0 ;;
	-h | --help) sed -n '2,/^set -e/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//' && exit 0 ;;
	-*) echo "install.sh: unknown option $1" >&2 && exit 2 ;;
	*) bin=$1 ;;
	esac
	shift
done

log() { echo "install: $*" >&2; }
die() {
	log "error: $*"
	exit 1
}

[[ $(id -u) == 0 ]] || die "must run as root"
[[ -d $root ]] || die "root $root is not a directory"
root=$(cd "$root" && pwd)
R=${root%/} # prefix for paths; "" for /

if [[ -z $bin ]]; then
	for c in ./bin/podhost "$src/bin/podhost"; do
		[[ -x $c ]] && bin=$c && break
	done
fi
[[ -n $bin ]] || die "no podhost binary: pass its path, or build it into ./bin/podhost (make build)"
[[ -x $bin && -f $bin ]] || die "$bin is not an executable file"
unit="$src/manifests/systemd/podhost.service"
[[ -f $unit ]] || die "missing $unit"
config="$src/manifests/config.yaml"

# live: installing into the running system, with systemd as PID 1 (not a chroot)
live=0
if [[ -z $R && -d /run/systemd/system ]]; then
	if ! command -v systemd-detect-virt >/dev/null || ! systemd-detect-virt -q --chroot; then
		live=1
	fi
fi

# directories (modes enforced on every run)
install -d -m 0755 -o root -g root "$R/usr/local/bin" "$R/etc/systemd/system" "$R/etc/podhost" \
	"$R/etc/podhost/manifests" "$R/etc/podhost/cni" "$R/etc/podhost/cni/net.d" "$R/var/log/pods"
install -d -m 0700 -o root -g root "$R/var/lib/podhost"

# binaries: copy next to the target, then rename over it (safe while podhost
# runs and while shims start log drivers). The log driver first: a new podhost
# must find it.
install_bin() {
	local tmp="$R/usr/local/bin/.$2.install.$$"
	install -m 0755 -o root -g root "$1" "$tmp"
	mv -f "$tmp" "$R/usr/local/bin/$2"
	log "installed $R/usr/local/bin/$2"
}
driver="$(dirname "$bin")/podhost-log-driver"
if [[ -x $driver && -f $driver ]]; then
	install_bin "$driver" podhost-log-driver
else
	log "warning: no $driver (make build builds it): podhost falls back to running itself as the log driver, with more memory per container"
fi
pause="$(dirname "$bin")/podhost-pause"
if [[ -x $pause && -f $pause ]]; then
	install_bin "$pause" podhost-pause
else
	log "warning: no $pause (make build builds it): podhost falls back to running itself as PID 1 of pods with shareProcessNamespace, with more memory per pod"
fi
install_bin "$bin" podhost
cluster_bin="$(dirname "$bin")/podhost-cluster"
if [[ -x $cluster_bin && -f $cluster_bin ]]; then
	install_bin "$cluster_bin" podhost-cluster
	install -m 0644 -o root -g root "$src/manifests/systemd/podhost-cluster.service" "$R/etc/systemd/system/podhost-cluster.service"
else
	log "no $cluster_bin (make build builds it): joining a Kubernetes cluster is not installed"
fi

unit_changed=1
if cmp -s "$unit" "$R/etc/systemd/system/podhost.service"; then unit_changed=0; fi
install -m 0644 -o root -g root "$unit" "$R/etc/systemd/system/podhost.service"

if [[ -e $R/etc/podhost/config.yaml ]]; then
	log "kept existing $R/etc/podhost/config.yaml"
	if [[ -n $(find "$R/etc/podhost/config.yaml" -maxdepth 0 -perm /044) ]]; then
		chmod go-rwx "$R/etc/podhost/config.yaml"
		log "made $R/etc/podhost/config.yaml 0600: it may hold manifestURLHeaders tokens"
	fi
elif [[ -f $config ]]; then
	install -m 0600 -o root -g root "$config" "$R/etc/podhost/config.yaml"
	log "installed default $R/etc/podhost/config.yaml"
else
	log "no manifests/config.yaml to install: podhost runs on its built-in defaults"
fi

# enable: WantedBy from the unit's [Install] section
enable_offline() {
	if command -v systemctl >/dev/null; then
		systemctl --root="$root" enable podhost.service >&2 && return 0
	fi
	# no systemctl here (e.g. a minimal builder host): make the links ourselves
	local wb
	for wb in $(sed -n 's/^WantedBy=//p' "$unit"); do
		mkdir -p "$R/etc/systemd/system/$wb.wants"
		ln -sfn /etc/systemd/system/podhost.service "$R/etc/systemd/system/$wb.wants/podhost.service"
	done
}
if ((live)); then
	systemctl daemon-reload
	((enable)) && systemctl enable podhost.service >&2
	if ((start)); then
		systemctl restart podhost.service
		log "restarted podhost.service"
	elif ((unit_changed)) && systemctl -q is-active podhost.service; then
		log "podhost.service is running the old unit/binary: systemctl restart podhost (pods keep running)"
	fi
else
	((enable)) && enable_offline
	((start)) && log "--start ignored: not a running systemd system (root $root)"
fi

# what podhost needs next to it
warn_missing() { log "warning: $1 not found under $root: $2"; }
[[ -e $R/etc/systemd/system/containerd.service || -e $R/lib/systemd/system/containerd.service || -e $R/usr/lib/systemd/system/containerd.service ]] ||
	warn_missing containerd.service "podhost.service requires it"
[[ -x $R/usr/sbin/runc || -x $R/usr/bin/runc || -x $R/usr/local/bin/runc || -x $R/usr/local/sbin/runc ]] ||
	warn_missing runc "containers cannot start"
[[ -x $R/usr/lib/cni/bridge || -x $R/opt/cni/bin/bridge ]] ||
	warn_missing "CNI plugins (bridge, host-local, portmap, loopback)" "pods without hostNetwork cannot start"
log "done: manifests go in $R/etc/podhost/manifests"
