#!/bin/bash
# podhost appliance test, guest side. Runs as root inside the Debian guest
# booted by scripts/vm/run.sh (systemd PID 1, cgroup v2), one phase per boot:
#   guest-test.sh smoke1|smoke2|provision|boot1|boot2
# Inputs on the read-only share /mnt/in (bin/, images/, repo/, vm/), results on
# /mnt/out: PHASE.tap ("ok N - ...", "not ok N - ...", "FIGURE k=v", "# ..."),
# PHASE.log (trace of every command). Writes /mnt/out/next = reboot to ask the
# driver (podhost-vmtest) for a reboot instead of a poweroff.
# Exit status: 0 when every check passed.
set -u

IN=${VMTEST_IN:-/mnt/in}
OUT=${VMTEST_OUT:-/mnt/out}
phase=${1:?usage: guest-test.sh PHASE}
here=$(cd "$(dirname "$0")" && pwd)
TAP="$OUT/$phase.tap"
LOG="$OUT/$phase.log"
: >"$TAP"
: >"$LOG"
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
# Every call of podhost, ctr and systemctl is bounded, so that a wedged
# daemon fails the check that met it instead of hanging the phase: wrappers
# first on PATH (they reach sh -c subshells too) run the real command under
# timeout(1). A bound is far above what a healthy call takes.
WRAP=/run/vmtest-bin
mkdir -p "$WRAP"
for w in podhost:120 ctr:60 systemctl:240; do
	cat >"$WRAP/${w%%:*}" <<WRAPPER
#!/bin/sh
PATH=${PATH}
exec timeout -k 5 \${VMTEST_CMD_TIMEOUT:-${w#*:}} ${w%%:*} "\$@"
WRAPPER
	chmod 0755 "$WRAP/${w%%:*}"
done
export PATH="$WRAP:$PATH"
NS=podhost # containerd namespace podhost uses
STATE=/var/lib/podhost-vmtest

n=0
failed=0
tap() { echo "$*" >>"$TAP" && echo "$*" && echo "$*" >>"$LOG"; }
ok() { n=$((n + 1)) && tap "ok $n - $*"; }
notok() { n=$((n + 1)) && failed=$((failed + 1)) && tap "not ok $n - $*"; }
diag() { tap "# $*"; }
figure() { tap "FIGURE $1=$2"; }
# step: what the phase is doing (named by the deadline's "not ok" line)
step=start
logcmd() { step="$*" && echo "+ [$(uptime_s)] $*" >>"$LOG" && "$@" >>"$LOG" 2>&1; }
# check DESC CMD...: runs CMD (output to the log), ok when it exits 0
check() {
	local d=$1
	shift
	if logcmd "$@"; then ok "$d"; else notok "$d"; fi
}
# expect DESC WANT GOT
expect() {
	if [ "$2" = "$3" ]; then ok "$1"; else notok "$1 (want '$2', got '$3')"; fi
}
uptime_s() { cut -d' ' -f1 /proc/uptime; }
# wait_for DEADLINE_S CMD...: polls CMD every 0.2 s until it succeeds or the deadline passes
wait_for() {
	local limit=$1 t
	shift
	step="wait_for $limit $*"
	t=$(($(date +%s) + limit))
	while ! "$@" >/dev/null 2>&1; do
		[ "$(date +%s)" -lt "$t" ] || return 1
		sleep 0.2
	done
}
finish() {
	# the state at the end of the phase, for whoever reads the results
	if command -v podhost >/dev/null && systemctl -q is-active podhost.service 2>/dev/null; then
		podhost get pods -o json >"$OUT/$phase.pods.json" 2>&1
		{
			podhost get pods -o wide
			ctr -n "$NS" containers ls
			ctr -n "$NS" task ls
			for p in $(podhost get pods -o name 2>/dev/null); do podhost describe pod "${p#*/}"; done
		} >"$OUT/$phase.state.txt" 2>&1
	fi
	[ -z "${deadline_pid:-}" ] || kill "$deadline_pid" 2>/dev/null
	tap "1..$n"
	diag "$phase: $((n - failed)) passed, $failed failed, uptime $(uptime_s)s"
	[ "$failed" = 0 ]
	exit $?
}

diag "phase $phase, boot id $(cat /proc/sys/kernel/random/boot_id), uptime $(uptime_s)s"

# The deadline: the host kills the VM at its boot timeout; $IN/deadline is
# the uptime by which the test must be done so that the journal export and
# the power action still fit. At the deadline a watchdog ends what the
# phase runs (the shell's children) and TERMs the shell, which records the
# step it was in and finishes (state, TAP plan) instead of being cut off.
deadline=$(cat "$IN/deadline" 2>/dev/null || echo 0)
on_deadline() {
	trap - TERM
	export VMTEST_CMD_TIMEOUT=15 # the state for the results, quickly
	notok "$phase: stopped at its deadline (uptime ${deadline}s) while in: $step"
	finish
}
if [ "$deadline" -gt 0 ]; then
	trap on_deadline TERM
	budget=$((deadline - $(cut -d. -f1 /proc/uptime)))
	[ "$budget" -gt 30 ] || budget=30
	main=$$
	(
		trap - TERM
		sleep "$budget"
		kill -TERM "$main" 2>/dev/null
		for c in $(ps -o pid= --ppid "$main"); do
			[ "$c" = "$BASHPID" ] || kill -TERM "$c" 2>/dev/null
		done
	) &
	deadline_pid=$!
fi

# ---------------------------------------------------------------- common checks
check_cgroup2() {
	expect "PID 1 is systemd" systemd "$(cat /proc/1/comm)"
	expect "/sys/fs/cgroup is cgroup2 (unified, no v1 hierarchies)" cgroup2fs "$(stat -fc %T /sys/fs/cgroup)"
	local c missing=""
	for c in cpu memory pids io cpuset; do
		grep -qw "$c" /sys/fs/cgroup/cgroup.controllers || missing="$missing $c"
	done
	expect "cgroup2 controllers cpu memory pids io cpuset available" "" "$missing"
	if grep -q ' cgroup ' /proc/mounts; then notok "no cgroup v1 mounts"; else ok "no cgroup v1 mounts"; fi
}

boot_figures() {
	# systemd-analyze needs the boot to be finished: multi-user.target waits
	# for podhost's READY=1 (the test driver does not)
	wait_for 300 systemd-analyze time || notok "$phase: the boot finished within 300s (systemctl list-jobs: $(systemctl list-jobs --no-pager --no-legend | tr -s ' ' | tr '\n' ';'))"
	local t
	t=$(systemd-analyze time 2>/dev/null | head -n1)
	diag "systemd-analyze: $t"
	# "Startup finished in 1.9s (kernel) + 12.1s (userspace) = 14.0s"
	figure "${phase}_systemd_userspace_s" "$(systemd-analyze time 2>/dev/null | sed -n 's/.*+ \([0-9.a-z ]*\) (userspace).*/\1/p' | head -n1 | tr -d ' ')"
	figure "${phase}_multi_user_uptime_s" "$(systemctl show -P ActiveEnterTimestampMonotonic multi-user.target | awk '{ printf "%.2f", $1 / 1e6 }')"
	systemd-analyze blame 2>/dev/null | head -n 8 >>"$LOG"
	systemd-analyze critical-chain multi-user.target 2>/dev/null >>"$LOG"
}

# ----------------------------------------------------------------------- smoke
smoke1() {
	boot_figures
	check_cgroup2
	check "containerd.service is active" systemctl is-active containerd.service
	expect "containerd runs in system.slice/containerd.service" "0::/system.slice/containerd.service" \
		"$(cat /proc/"$(systemctl show -P MainPID containerd.service)"/cgroup)"
	check "ctr version" ctr version
	check "no network device besides lo" sh -c '[ "$(ls /sys/class/net)" = lo ]'
	check "9p shares mounted" sh -c 'grep -q " /mnt/in 9p " /proc/mounts && grep -q " /mnt/out 9p " /proc/mounts'
	check "import the test image" ctr -n vmtest images import "$IN/images/busybox.tar"
	local outp
	outp=$(ctr -n vmtest run --rm podhost.test/busybox:1 smoke sh -c 'echo hello; cat /proc/self/cgroup' 2>>"$LOG")
	echo "$outp" >>"$LOG"
	expect "ctr run of podhost.test/busybox:1 prints hello" hello "$(echo "$outp" | head -n1)"
	check "runc systemd cgroup in a transient slice" sh -c "ctr -n vmtest run --rm --runc-systemd-cgroup --cgroup podhost-vmtest.slice:vmtest:smoke2 podhost.test/busybox:1 smoke2 cat /proc/self/cgroup | grep -x '0::/podhost.slice/podhost-vmtest.slice/vmtest-smoke2.scope'"
	mkdir -p "$STATE"
	cat /proc/sys/kernel/random/boot_id >"$STATE/smoke-boot-id"
	sync
	echo reboot >"$OUT/next"
}

smoke2() {
	boot_figures
	check_cgroup2
	check "state written before the reboot survived" test -s "$STATE/smoke-boot-id"
	if [ "$(cat "$STATE/smoke-boot-id" 2>/dev/null)" != "$(cat /proc/sys/kernel/random/boot_id)" ]; then
		ok "new boot id after the reboot"
	else
		notok "new boot id after the reboot"
	fi
	check "journal of the previous boot is kept" journalctl -b -1 -n 1
	check "the image is still there after the reboot" sh -c "ctr -n vmtest images ls -q | grep -x podhost.test/busybox:1"
	check "containerd.service is active" systemctl is-active containerd.service
	# A container whose PID 1 ignores SIGTERM (busybox sleep) in a systemd
	# scope holds a poweroff for the scope's stop timeout (default 90 s).
	# runc sets scope properties from org.systemd.property.* annotations: with
	# TimeoutStopSec=5 the host sees a short poweroff (the way for podhost to
	# bound shutdown by terminationGracePeriodSeconds).
	check "start a sleep container in a scope with TimeoutStopSec=5" ctr -n vmtest run -d --runc-systemd-cgroup \
		--annotation org.systemd.property.TimeoutStopSec=5 \
		--cgroup podhost-vmtest.slice:vmtest:sleeper podhost.test/busybox:1 sleeper sleep 1000000
	expect "the scope's stop timeout is 5 s" 5s "$(systemctl show -P TimeoutStopUSec vmtest-sleeper.scope)"
}

case $phase in
smoke1 | smoke2) "$phase" ;;
*)
	if [ -f "$here/phases.sh" ]; then
		. "$here/phases.sh"
		"$phase"
	else
		notok "unknown phase $phase"
	fi
	;;
esac
finish
