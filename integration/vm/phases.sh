# Appliance test phases that need podhost; sourced by guest-test.sh (bash),
# which provides ok/notok/check/expect/diag/figure/logcmd/wait_for/uptime_s,
# $IN, $OUT, $LOG, $NS, $STATE, $phase, $here.
#
#   provision  image-builder step: containerd binaries, test image import,
#              scripts/install.sh, manifests; then power off (not a reboot:
#              the next boot is the appliance's first)
#   boot1      podhost started by systemd at boot; pods Running; cgroup v2 pod
#              slices (systemd driver) with the pod's resources; podhost
#              restart / SIGKILL / stop leave containers alone; then reboot
#   boot2      pods back after the reboot, podhost saw the new boot id, nothing
#              stale; the reboot terminated the pods gracefully (preStop, TERM);
#              cgroupfs driver scenario; then poweroff with pods running, podhost
#              on the cgroupfs driver
#   boot3      the poweroff terminated the pods gracefully too; pods back;
#              power off

MANIFESTS=/etc/podhost/manifests
CONFIG=/etc/podhost/config.yaml
SETTLE_LIMIT=${SETTLE_LIMIT:-300} # seconds for every pod to be Running
# after a first settle failure the state is known to be broken: later waits
# only give the pods a short while, so one bug does not eat the boot's time
SETTLE_LIMIT_AFTER_FAILURE=${SETTLE_LIMIT_AFTER_FAILURE:-45}

# ------------------------------------------------------------------ helpers
pods_json() { podhost get pods -o json 2>>"$LOG"; }

# expected_names: the pod names the manifests dir declares (metadata.name of
# each document), one per line.
expected_names() {
	local f files=()
	for f in "$MANIFESTS"/*.yaml "$MANIFESTS"/*.yml "$MANIFESTS"/*.json; do
		[ -f "$f" ] && files+=("$f")
	done
	[ ${#files[@]} -gt 0 ] || return 0
	awk '
		FNR == 1 || /^---/ { inmeta = 0; got = 0 }
		/^metadata:/ { inmeta = 1; next }
		/^[^ #]/ { inmeta = 0 }
		inmeta && !got && /^  name:/ { print $2; got = 1 }' "${files[@]}" | tr -d '"'"'" | sort
}

# settled N: N pods listed and every restartPolicy=Always pod Running with
# all its containers running (run-to-completion pods are checked apart:
# terminal_ok)
settled() {
	pods_json | jq -e --argjson n "$1" '
		(.items | length) == $n and
		all(.items[] | select((.spec.restartPolicy // "Always") == "Always");
			.status.phase == "Running" and ((.status.containerStatuses // []) | length > 0) and
			all(.status.containerStatuses[]; .state.running != null))' >/dev/null
}
# terminal_ok: every run-to-completion pod (restartPolicy Never/OnFailure)
# has Succeeded (the example pods all succeed)
terminal_ok() {
	pods_json | jq -e 'all(.items[] | select((.spec.restartPolicy // "Always") != "Always"); .status.phase == "Succeeded")' >/dev/null
}
# check_terminal LABEL SECONDS
check_terminal() {
	if wait_for "$2" terminal_ok; then
		ok "$1: run-to-completion pods Succeeded"
	else
		notok "$1: run-to-completion pods Succeeded (got: $(pods_json | jq -r '[.items[] | select((.spec.restartPolicy // "Always") != "Always") | .metadata.name + "=" + .status.phase] | join(" ")'))"
	fi
}

pod_table() { podhost get pods -o wide >>"$LOG" 2>&1; }

# running_tasks: "<container id> <pid>" of every RUNNING task, sorted
running_tasks() { ctr -n "$NS" task ls 2>>"$LOG" | awk 'NR > 1 && $3 == "RUNNING" { print $1, $2 }' | sort; }
# container_labels: "<container id> <pod uid> <container name>" for every container
container_labels() {
	local id
	for id in $(ctr -n "$NS" containers ls -q 2>>"$LOG"); do
		ctr -n "$NS" containers info "$id" 2>>"$LOG" | jq -r --arg id "$id" \
			'[$id, (.Labels["podhost.io/pod-uid"] // "-"), (.Labels["podhost.io/container-name"] // "-")] | join(" ")'
	done | sort
}

podhost_ready() { systemctl -q is-active podhost.service && podhost get pods >/dev/null 2>&1; }

# wait_all_settled: polls until every expected pod is settled; sets
# settle_uptime (uptime when first seen) and returns 1 on timeout.
wait_all_settled() {
	local want
	want=$(expected_names | wc -l)
	settle_uptime=""
	if wait_for "$SETTLE_LIMIT" settled "$want"; then
		settle_uptime=$(uptime_s)
		return 0
	fi
	SETTLE_LIMIT=$SETTLE_LIMIT_AFTER_FAILURE
	pods_json | jq -r '.items[] | "\(.metadata.name) phase=\(.status.phase) reason=\(.status.reason // "")"' | sed 's/^/# not settled: /' >>"$LOG"
	return 1
}

# last_start_uptime: uptime (s) at which the last container of the
# restartPolicy=Always pods started, from the statuses' startedAt (wall clock)
last_start_uptime() {
	local last now_wall now_up
	last=$(pods_json | jq -r '[.items[] | select((.spec.restartPolicy // "Always") == "Always") |
		.status.containerStatuses[]?.state.running.startedAt // empty] | max // empty')
	[ -n "$last" ] || return 1
	now_wall=$(date +%s.%N)
	now_up=$(uptime_s)
	awk -v s="$(date -d "$last" +%s.%N)" -v w="$now_wall" -v u="$now_up" 'BEGIN { printf "%.2f", u - (w - s) }'
}

# unit_uptime UNIT PROPERTY: a *TimestampMonotonic property in seconds
unit_uptime() { systemctl show -P "$2" "$1" | awk '{ printf "%.2f", $1 / 1e6 }'; }

# report_boot_to_running LABEL
report_boot_to_running() {
	figure "${phase}_podhost_started_uptime_s" "$(unit_uptime podhost.service ExecMainStartTimestampMonotonic)"
	figure "${phase}_podhost_ready_uptime_s" "$(unit_uptime podhost.service ActiveEnterTimestampMonotonic)"
	local started
	started=$(last_start_uptime) && figure "boot_to_running_s${1}" "$started"
	figure "boot_to_running_observed_s${1}" "$settle_uptime"
}

# slice_dir QOS UID: the pod slice podhost's systemd driver makes (cgroup path)
slice_dir() {
	local u=${2//-/_}
	case $1 in
	Guaranteed) echo "/podhost.slice/podhost-pod$u.slice" ;;
	Burstable) echo "/podhost.slice/podhost-burstable.slice/podhost-burstable-pod$u.slice" ;;
	BestEffort) echo "/podhost.slice/podhost-besteffort.slice/podhost-besteffort-pod$u.slice" ;;
	esac
}
# fs_dir QOS UID: the cgroupfs driver's pod cgroup
fs_dir() {
	case $1 in
	Guaranteed) echo "/podhost/pod$2" ;;
	Burstable) echo "/podhost/burstable/pod$2" ;;
	BestEffort) echo "/podhost/besteffort/pod$2" ;;
	esac
}

# check_pod_cgroups DRIVER [POD...]: each pod's running containers live in the
# pod cgroup of its QoS class, whose files hold the pod's resources
# (vmtest/* annotations). Without POD: every pod with restartPolicy Always.
check_pod_cgroups() {
	local driver=$1 json name uid qos dir cid pid cg f want got labels
	shift
	json=$(pods_json)
	labels=$(container_labels)
	local tasks
	tasks=$(running_tasks)
	local names=("$@")
	if [ ${#names[@]} = 0 ]; then
		mapfile -t names < <(echo "$json" | jq -r '.items[] | select((.spec.restartPolicy // "Always") == "Always") | .metadata.name')
	fi
	for name in "${names[@]}"; do
		uid=$(echo "$json" | jq -r --arg n "$name" '.items[] | select(.metadata.name == $n) | .metadata.uid')
		qos=$(echo "$json" | jq -r --arg n "$name" '.items[] | select(.metadata.name == $n) | .status.qosClass // .metadata.annotations["vmtest/qos"] // empty')
		if [ -z "$uid" ] || [ -z "$qos" ]; then
			notok "$driver: pod $name has a uid and a QoS class (uid='$uid' qos='$qos')"
			continue
		fi
		want=$(echo "$json" | jq -r --arg n "$name" '.items[] | select(.metadata.name == $n) | .metadata.annotations["vmtest/qos"] // empty')
		[ -z "$want" ] || expect "$driver: $name QoS class" "$want" "$qos"
		if [ "$driver" = systemd ]; then dir=$(slice_dir "$qos" "$uid"); else dir=$(fs_dir "$qos" "$uid"); fi
		local n_ok=0 n_bad=0 bad=""
		for cid in $(echo "$labels" | awk -v u="$uid" '$2 == u { print $1 }'); do
			pid=$(echo "$tasks" | awk -v c="$cid" '$1 == c { print $2 }')
			[ -n "$pid" ] || continue
			cg=$(sed -n 's/^0:://p' "/proc/$pid/cgroup")
			echo "cgroup of $name/$cid (pid $pid): $cg" >>"$LOG"
			case $cg in
			"$dir"/*) n_ok=$((n_ok + 1)) ;;
			*) n_bad=$((n_bad + 1)) && bad="$bad $cg" ;;
			esac
		done
		if [ "$n_ok" -gt 0 ] && [ "$n_bad" = 0 ]; then
			ok "$driver: $name ($qos): $n_ok container(s) under $dir"
		else
			notok "$driver: $name ($qos): containers under $dir (found:${bad:- none running})"
		fi
		[ -d "/sys/fs/cgroup$dir" ] || continue
		for f in memory.max cpu.max cpu.weight pids.max; do
			want=$(echo "$json" | jq -r --arg n "$name" --arg f "$f" '.items[] | select(.metadata.name == $n) | .metadata.annotations["vmtest/" + $f] // empty')
			got=$(cat "/sys/fs/cgroup$dir/$f" 2>/dev/null || echo missing)
			if [ -n "$want" ]; then
				expect "$driver: $name $f" "$want" "$got"
			elif [ "$f" = pids.max ]; then
				case $got in
				max | [1-9]*) ok "$driver: $name pids.max is set ($got)" ;;
				*) notok "$driver: $name pids.max is set (got '$got')" ;;
				esac
			fi
		done
	done
}

# check_top_cgroup DRIVER DIR RESERVED_MILLICPU RESERVED_BYTES: node
# allocatable enforced on the cgroup above every pod, as the kubelet's
# enforceNodeAllocatable [pods] on kubepods: cpu.weight from the CPUs less
# the reserved cpu, memory.max MemTotal less the reserved memory and the
# huge pages (page-aligned by the kernel)
check_top_cgroup() {
	local driver=$1 dir=/sys/fs/cgroup$2 shares weight mem
	shares=$((($(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc) * 1000 - $3) * 1024 / 1000))
	weight=$((1 + ((shares - 2) * 9999) / 262142))
	# %.0f, not %d: mawk clamps %d to 2^31-1
	mem=$(awk -v r="$4" -v p="$(getconf PAGESIZE)" '/^MemTotal:/ { m = $2 * 1024 } /^Hugetlb:/ { h = $2 * 1024 }
		/^HugePages_Total:/ { n = $2 } /^Hugepagesize:/ { sz = $2 * 1024 }
		END { if (h == "") h = n * sz; m = m - r - h; printf "%.0f", m - m % p }' /proc/meminfo)
	expect "$driver: top cgroup cpu.weight (node allocatable)" "$weight" "$(cat "$dir/cpu.weight" 2>/dev/null)"
	expect "$driver: top cgroup memory.max (node allocatable)" "$mem" "$(cat "$dir/memory.max" 2>/dev/null)"
}

# same_tasks DESC BEFORE_FILE: every container that ran before still runs,
# with the same PID, and no other task appeared
same_tasks() {
	local now
	now=$(running_tasks)
	if [ "$now" = "$(cat "$2")" ]; then
		ok "$1"
	else
		notok "$1"
		{
			echo "before:" && cat "$2"
			echo "after:" && echo "$now"
		} >>"$LOG"
	fi
}

# no_stale LABEL: nothing beyond the live pods: containerd containers,
# pinned netns files, CNI host-local leases, pod cgroups
no_stale() {
	local json uids labels tasks
	json=$(pods_json)
	uids=$(echo "$json" | jq -r '.items[].metadata.uid' | sort)
	labels=$(container_labels)
	tasks=$(running_tasks)
	echo "containers:" >>"$LOG" && echo "$labels" >>"$LOG"
	echo "tasks:" >>"$LOG" && echo "$tasks" >>"$LOG"
	# 1. every container belongs to a listed pod
	local orphans
	orphans=$(echo "$labels" | awk -v u="$(echo "$uids" | tr '\n' ' ')" 'BEGIN { n = split(u, a, " "); for (i = 1; i <= n; i++) live[a[i]] = 1 } NF && !($2 in live) { print $1 }')
	expect "$1: no containerd containers of unknown pods" "" "$(echo $orphans)"
	# 2. Running (restartPolicy Always) pods: per container name exactly one
	#    running instance and at most one dead one: podhost keeps the previous
	#    instance for lastState and `logs --previous` (as the kubelet does)
	#    and removes older ones, also those of an earlier boot
	local extra="" name uid cname running dead cid
	for uid in $(echo "$json" | jq -r '.items[] | select((.spec.restartPolicy // "Always") == "Always") | .metadata.uid'); do
		name=$(echo "$json" | jq -r --arg u "$uid" '.items[] | select(.metadata.uid == $u) | .metadata.name')
		for cname in $(echo "$json" | jq -r --arg u "$uid" '.items[] | select(.metadata.uid == $u) | .spec.containers[].name'); do
			running=0 dead=0
			for cid in $(echo "$labels" | awk -v u="$uid" -v c="$cname" '$2 == u && $3 == c { print $1 }'); do
				if echo "$tasks" | awk -v c="$cid" '$1 == c { f = 1 } END { exit !f }'; then
					running=$((running + 1))
				else
					dead=$((dead + 1))
				fi
			done
			[ "$running" = 1 ] && [ "$dead" -le 1 ] || extra="$extra $name/$cname:running=$running,dead=$dead"
		done
	done
	if [ -z "$extra" ]; then
		ok "$1: one live container per container, at most one dead previous instance"
	else
		notok "$1: one live container per container, at most one dead previous instance:$extra"
	fi
	# 3. pinned netns files: at least one per pod without hostNetwork that has
	#    a running container, at most one per listed pod without hostNetwork
	local running_net all_net netns_files
	running_net=$(echo "$json" | jq '[.items[] | select(.spec.hostNetwork != true and any(.status.containerStatuses[]?; .state.running != null))] | length')
	all_net=$(echo "$json" | jq '[.items[] | select(.spec.hostNetwork != true)] | length')
	netns_files=$(find /run/podhost/netns -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)
	if [ "$netns_files" -ge "$running_net" ] && [ "$netns_files" -le "$all_net" ]; then
		ok "$1: $netns_files pinned netns files ($running_net pods with running containers, $all_net pods with their own netns)"
	else
		notok "$1: pinned netns files: $netns_files ($running_net pods with running containers, $all_net pods with their own netns)"
		ls -l /run/podhost/netns >>"$LOG" 2>&1
	fi
	# 4. CNI host-local leases: same bounds
	local datadir conf net leases
	conf=$(ls /etc/podhost/cni/net.d/*.conflist /etc/cni/net.d/*.conflist 2>/dev/null | head -n1)
	datadir=$(jq -r '[.plugins[] | .ipam.dataDir // empty][0] // "/var/lib/cni/networks"' "$conf" 2>/dev/null)
	net=$(jq -r .name "$conf" 2>/dev/null)
	leases=$(find "$datadir/$net" -maxdepth 1 -type f -name '[0-9]*' 2>/dev/null | wc -l)
	diag "$1: CNI conf $conf, leases in $datadir/$net: $(ls "$datadir/$net" 2>/dev/null | tr '\n' ' ')"
	if [ -n "$conf" ] && [ "$leases" -ge "$running_net" ] && [ "$leases" -le "$all_net" ]; then
		ok "$1: $leases CNI IP leases ($running_net pods with running containers, $all_net pods with their own netns)"
	else
		notok "$1: CNI IP leases: $leases ($running_net pods with running containers, $all_net pods with their own netns)"
	fi
	# 5. pod cgroups: none of pods that are gone
	local cg_uids stale_cg
	cg_uids=$(
		{
			find /sys/fs/cgroup/podhost.slice -type d -name 'podhost-*pod[0-9a-f]*.slice' 2>/dev/null |
				sed 's/.*pod\([0-9a-f_]*\)\.slice$/\1/' | tr _ -
			find /sys/fs/cgroup/podhost -type d -name 'pod[0-9a-f]*' 2>/dev/null | sed 's/.*\/pod//'
		} | sort -u
	)
	stale_cg=$(echo "$cg_uids" | grep -vxF -f <(echo "$uids") | grep . || true)
	expect "$1: no pod cgroups of pods that are gone" "" "$(echo $stale_cg)"
}

# ---------------------------------------------------------------- provision
provision() {
	# containerd from the host's cache (the image has a copy; the share wins)
	local b changed=0
	for b in containerd containerd-shim-runc-v2 ctr; do
		if [ -x "$IN/bin/$b" ] && ! cmp -s "$IN/bin/$b" "/usr/local/bin/$b"; then
			install -m 0755 "$IN/bin/$b" "/usr/local/bin/$b" && changed=1
		fi
	done
	[ "$changed" = 0 ] || logcmd systemctl restart containerd.service
	check "containerd.service is active" systemctl is-active containerd.service
	check "import the test image into containerd namespace $NS" ctr -n "$NS" images import "$IN/images/busybox.tar"

	check "install.sh installs podhost" "$IN/repo/scripts/install.sh" "$IN/bin/podhost"
	check "podhost binary installed" test -x /usr/local/bin/podhost
	check "podhost-cluster installed beside it" test -x /usr/local/bin/podhost-cluster
	expect "podhost-cluster.service installed, not enabled (standalone is the default)" disabled \
		"$(systemctl is-enabled podhost-cluster.service 2>&1)"
	check "podhost.service is enabled" systemctl is-enabled podhost.service
	expect "install.sh does not start podhost" inactive "$(systemctl is-active podhost.service)"
	local d m
	for d in "/etc/podhost/manifests 755" "/var/lib/podhost 700" "/var/log/pods 755" "/etc/podhost/cni/net.d 755"; do
		set -- $d
		m=$(stat -c '%a %U' "$1" 2>/dev/null)
		expect "directory $1 mode $2 root" "$2 root" "$m"
	done
	if [ -f "$IN/repo/manifests/config.yaml" ]; then
		check "default config installed" cmp "$IN/repo/manifests/config.yaml" "$CONFIG"
		expect "config installed 0600 root (it may hold tokens)" "600 root" "$(stat -c '%a %U' "$CONFIG")"
	fi
	echo "# edited by the operator" >>"$CONFIG"
	printf 'shutdownGracePeriod: 30s\nshutdownGracePeriodCriticalPods: 10s\n' >>"$CONFIG"
	chmod 0644 "$CONFIG"
	check "install.sh is idempotent" "$IN/repo/scripts/install.sh" "$IN/bin/podhost"
	check "install.sh keeps an existing config" grep -q "edited by the operator" "$CONFIG"
	expect "install.sh makes an existing config 0600" "600" "$(stat -c '%a' "$CONFIG")"
	rm -rf /tmp/imgroot && mkdir -p /tmp/imgroot
	check "install.sh --root DIR (image builder)" "$IN/repo/scripts/install.sh" --root /tmp/imgroot "$IN/bin/podhost"
	check "install.sh --root: binary, unit, enabled, dirs" sh -c 'test -x /tmp/imgroot/usr/local/bin/podhost &&
		test -x /tmp/imgroot/usr/local/bin/podhost-log-driver &&
		test -f /tmp/imgroot/etc/systemd/system/podhost.service &&
		test -L /tmp/imgroot/etc/systemd/system/multi-user.target.wants/podhost.service &&
		test "$(stat -c %a /tmp/imgroot/var/lib/podhost)" = 700 && test -d /tmp/imgroot/etc/podhost/manifests'
	check "install.sh --root leaves the running system alone" sh -c '! systemctl -q is-active podhost.service'
	rm -rf /tmp/imgroot

	# the appliance's static pods: the repo's examples + the test pods
	local f
	for f in "$IN/repo/manifests/examples"/*.yaml "$here/manifests"/*.yaml; do
		[ -f "$f" ] && install -m 0644 "$f" "$MANIFESTS/"
	done
	diag "manifests: $(ls "$MANIFESTS" | tr '\n' ' ')"
	diag "pods expected: $(expected_names | tr '\n' ' ')"
	check "manifests are in place" test -n "$(expected_names)"
	logcmd podhost version
	mkdir -p "$STATE"
	sync
	# next boot is the appliance's first: power off (the driver's default)
}

# -------------------------------------------------------------------- boot1
boot1() {
	boot_figures
	check_cgroup2
	check "podhost.service was started by systemd at boot" systemctl is-active podhost.service
	expect "podhost.service is enabled" enabled "$(systemctl is-enabled podhost.service 2>&1)"
	logcmd podhost check
	local limit=$SETTLE_LIMIT
	if wait_all_settled; then ok "every pod Running (boot 1)"; else notok "every pod Running within ${limit}s (boot 1)"; fi
	pod_table
	report_boot_to_running ""
	check_terminal "boot 1" 120
	pod_table

	pods_json | jq -r '.items[] | .metadata.name + " " + .metadata.uid' | sort >"$STATE/boot1-pods"
	check_pod_cgroups systemd
	check_top_cgroup systemd /podhost.slice 0 0

	# daemon restarts under systemd leave containers alone
	local before="$STATE/tasks"
	running_tasks >"$before"
	diag "running tasks: $(wc -l <"$before")"
	local start_times
	start_times=$(pods_json | jq -r '.items[] | .metadata.name + " " + (.status.startTime // "-")' | sort)
	logcmd systemctl restart podhost.service
	if wait_for 60 podhost_ready; then ok "systemctl restart podhost: podhost back"; else notok "systemctl restart podhost: podhost back within 60s"; fi
	same_tasks "systemctl restart podhost: every container still runs with the same PID" "$before"
	wait_all_settled && ok "systemctl restart podhost: every pod Running" || notok "systemctl restart podhost: every pod Running"

	local restarts
	restarts=$(systemctl show -P NRestarts podhost.service)
	logcmd systemctl kill -s KILL podhost.service
	wait_for 30 sh -c "[ \"\$(systemctl show -P NRestarts podhost.service)\" -gt $restarts ]" &&
		ok "systemctl kill -s KILL podhost: systemd restarted podhost" ||
		notok "systemctl kill -s KILL podhost: systemd restarted podhost (NRestarts $restarts -> $(systemctl show -P NRestarts podhost.service))"
	wait_for 60 podhost_ready || true
	same_tasks "systemctl kill -s KILL podhost: every container still runs with the same PID" "$before"
	wait_all_settled && ok "after SIGKILL: every pod Running" || notok "after SIGKILL: every pod Running"

	logcmd systemctl stop podhost.service
	expect "systemctl stop podhost: podhost stopped" inactive "$(systemctl is-active podhost.service)"
	same_tasks "systemctl stop podhost: pods keep running (same PIDs)" "$before"
	logcmd systemctl start podhost.service
	wait_for 60 podhost_ready && ok "systemctl start podhost: podhost back" || notok "systemctl start podhost: podhost back"
	wait_all_settled && ok "after stop/start: every pod Running" || notok "after stop/start: every pod Running"
	same_tasks "after stop/start: same containers, same PIDs (adopted, not restarted)" "$before"
	# containerd restart: KillMode=process keeps the shims; podhost (Requires=)
	# is restarted with it and adopts again
	local since
	since=$(systemctl show -P ActiveEnterTimestampMonotonic podhost.service)
	logcmd systemctl restart containerd.service
	check "systemctl restart containerd: containerd back" systemctl is-active containerd.service
	wait_for 60 sh -c "[ \"\$(systemctl show -P ActiveEnterTimestampMonotonic podhost.service)\" != $since ]" &&
		ok "systemctl restart containerd: podhost restarted with it" ||
		notok "systemctl restart containerd: podhost restarted with it"
	if wait_for 60 podhost_ready; then ok "after a containerd restart: podhost back"; else notok "after a containerd restart: podhost back"; fi
	wait_all_settled && ok "after a containerd restart: every pod Running" || notok "after a containerd restart: every pod Running"
	same_tasks "after a containerd restart: same containers, same PIDs" "$before"
	watchdog_scenario "$before"
	check_inhibitor

	local rc
	rc=$(pods_json | jq '[.items[] | select((.spec.restartPolicy // "Always") == "Always") | .status.containerStatuses[]?.restartCount] | add // 0')
	expect "no container restarts in boot 1" 0 "$rc"
	expect "pods' status.startTime unchanged across podhost restarts" "$start_times" \
		"$(pods_json | jq -r '.items[] | .metadata.name + " " + (.status.startTime // "-")' | sort)"
	pod_table
	no_stale "boot 1"

	running_tasks >"$STATE/boot1-tasks"
	cat /proc/sys/kernel/random/boot_id >"$STATE/prev-boot-id"
	sync
	echo reboot >"$OUT/next"
}

# -------------------------------------------------------------------- boot2
boot2() {
	boot_figures
	check_cgroup2
	check "podhost.service was started by systemd at boot" systemctl is-active podhost.service
	local limit=$SETTLE_LIMIT
	if wait_all_settled; then ok "every pod Running after the reboot"; else notok "every pod Running within ${limit}s after the reboot"; fi
	pod_table
	report_boot_to_running "_after_reboot"
	check_terminal "after reboot" 30
	pod_table
	expect "same pods (names, UIDs) as before the reboot" "$(cat "$STATE/boot1-pods" 2>/dev/null)" \
		"$(pods_json | jq -r '.items[] | .metadata.name + " " + .metadata.uid' | sort)"
	local same
	same=$(comm -12 <(cut -d' ' -f1 "$STATE/boot1-tasks" 2>/dev/null) <(running_tasks | cut -d' ' -f1) | wc -l)
	expect "containers were recreated after the reboot (none of boot 1's ids runs)" 0 "$same"
	local line
	line=$(journalctl -b -u podhost.service -o cat --no-pager 2>/dev/null | grep -Ei 'boot[ _-]?id' | head -n1)
	if [ -n "$line" ]; then ok "podhost noticed the new boot id"; else notok "podhost noticed the new boot id (no 'boot id' line in its journal)"; fi
	diag "journal: $line"
	check_pod_cgroups systemd
	no_stale "after reboot"
	check_graceful_shutdown "reboot (systemd driver)"

	cgroupfs_scenario

	no_stale "before poweroff"
	# power off with podhost on the cgroupfs driver (boot3 checks it)
	if grep -q '^cgroupDriver:' "$CONFIG"; then
		sed -i 's/^cgroupDriver:.*/cgroupDriver: cgroupfs/' "$CONFIG"
	else
		echo "cgroupDriver: cgroupfs" >>"$CONFIG"
	fi
	logcmd systemctl restart podhost.service
	wait_for 60 podhost_ready && ok "podhost restarted on the cgroupfs driver for the poweroff" || notok "podhost restarted on the cgroupfs driver for the poweroff"
	wait_all_settled || notok "cgroupfs: every pod Running before the poweroff"
	check_inhibitor
	cat /proc/sys/kernel/random/boot_id >"$STATE/prev-boot-id"
	diag "powering off with $(running_tasks | wc -l) running containers"
	pod_table
	sync
}

# -------------------------------------------------------------------- boot3
boot3() {
	boot_figures
	check "podhost.service was started by systemd at boot" systemctl is-active podhost.service
	local limit=$SETTLE_LIMIT
	if wait_all_settled; then ok "every pod Running after the poweroff"; else notok "every pod Running within ${limit}s after the poweroff"; fi
	pod_table
	check_graceful_shutdown "poweroff (cgroupfs driver)"
	cp "$STATE/config.yaml.orig" "$CONFIG"
}

# check_inhibitor: podhost holds its logind delay inhibitor
check_inhibitor() {
	logcmd systemd-inhibit --list --no-pager
	if wait_for 30 sh -c "systemd-inhibit --list --no-pager | grep -q podhost"; then
		ok "podhost holds a logind shutdown delay inhibitor"
	else
		notok "podhost holds a logind shutdown delay inhibitor"
	fi
}

# check_graceful_shutdown LABEL: the previous boot's shutdown ran
# vmtest-shutdown's preStop hook and its TERM trap (lines carry the boot
# id), podhost logged the shutdown, and the pod runs again.
check_graceful_shutdown() {
	local prev dir=/var/lib/vmtest-shutdown
	prev=$(cat "$STATE/prev-boot-id" 2>/dev/null)
	logcmd cat "$dir/marker" "$dir/term"
	if [ -n "$prev" ] && grep -qx "prestop $prev" "$dir/marker" 2>/dev/null; then
		ok "$1: preStop hook ran at shutdown (marker of the previous boot)"
	else
		notok "$1: preStop hook ran at shutdown (no 'prestop $prev' in $dir/marker)"
	fi
	if [ -n "$prev" ] && grep -qx "TERM $prev" "$dir/term" 2>/dev/null; then
		ok "$1: the container got SIGTERM at shutdown"
	else
		notok "$1: the container got SIGTERM at shutdown (no 'TERM $prev' in $dir/term)"
	fi
	if journalctl -b -1 -u podhost.service -o cat --no-pager 2>/dev/null | grep -q 'released the shutdown inhibitor'; then
		ok "$1: podhost terminated the pods and released its inhibitor"
	else
		notok "$1: podhost terminated the pods and released its inhibitor (not in the previous boot's journal)"
		journalctl -b -1 -u podhost.service -o cat --no-pager 2>/dev/null | tail -n 40 >>"$LOG"
	fi
	expect "$1: vmtest-shutdown Running again" Running \
		"$(pods_json | jq -r '.items[] | select(.metadata.name == "vmtest-shutdown") | .status.phase')"
}

# watchdog_scenario BEFORE_FILE: a stopped podhost (SIGSTOP: its sync loop
# makes no progress) is restarted by systemd's watchdog within WatchdogSec
# + 10 s; containers keep their PIDs.
watchdog_scenario() {
	local wsec restarts t0 took
	wsec=$(systemctl show -P WatchdogUSec podhost.service)
	diag "podhost.service WatchdogUSec=$wsec"
	wsec=$(systemd-analyze timespan "$wsec" 2>/dev/null | awk '/μs:|us:/ { print int($2 / 1000000) }')
	[ -n "$wsec" ] && [ "$wsec" -gt 0 ] || { notok "podhost.service has WatchdogSec set" && return; }
	restarts=$(systemctl show -P NRestarts podhost.service)
	t0=$(date +%s)
	logcmd systemctl kill -s SIGSTOP podhost.service
	if wait_for $((wsec + 10)) sh -c "[ \"\$(systemctl show -P NRestarts podhost.service)\" -gt $restarts ]"; then
		took=$(($(date +%s) - t0))
		figure watchdog_restart_s "$took"
		ok "SIGSTOP podhost: the watchdog restarted it after ${took}s (WatchdogSec ${wsec}s)"
	else
		notok "SIGSTOP podhost: the watchdog restarted it within $((wsec + 10))s"
	fi
	wait_for 60 podhost_ready || true
	same_tasks "watchdog restart: every container still runs with the same PID" "$1"
	wait_all_settled && ok "after the watchdog restart: every pod Running" || notok "after the watchdog restart: every pod Running"
}

# cgroupfs driver on cgroup v2 with systemd as PID 1: restart podhost with
# cgroupDriver: cgroupfs, run a pod, check /sys/fs/cgroup/podhost/..., delete
# it, restore the config.
cgroupfs_scenario() {
	cp "$CONFIG" "$STATE/config.yaml.orig" 2>/dev/null || : >"$STATE/config.yaml.orig"
	if grep -q '^cgroupDriver:' "$CONFIG" 2>/dev/null; then
		sed -i 's/^cgroupDriver:.*/cgroupDriver: cgroupfs/' "$CONFIG"
	else
		echo "cgroupDriver: cgroupfs" >>"$CONFIG"
	fi
	if grep -q '^systemReserved:' "$CONFIG" 2>/dev/null; then
		sed -i 's/^systemReserved:.*/systemReserved: {cpu: 100m, memory: 256Mi}/' "$CONFIG"
	else
		echo "systemReserved: {cpu: 100m, memory: 256Mi}" >>"$CONFIG"
	fi
	local before="$STATE/tasks"
	running_tasks >"$before"
	logcmd systemctl restart podhost.service
	wait_for 60 podhost_ready && ok "cgroupfs: podhost restarted with cgroupDriver: cgroupfs" || notok "cgroupfs: podhost restarted with cgroupDriver: cgroupfs"
	logcmd journalctl -b -u podhost.service -n 30 --no-pager
	if wait_all_settled; then ok "cgroupfs: every pod Running"; else notok "cgroupfs: every pod Running"; fi
	local now
	now=$(running_tasks)
	if [ "$now" = "$(cat "$before")" ]; then
		diag "cgroupfs: pods made with the systemd driver were kept (same PIDs)"
	else
		diag "cgroupfs: pods made with the systemd driver were restarted by the driver change"
	fi

	local pod=$here/cgroupfs-pod.yaml
	check "cgroupfs: podhost apply -f cgroupfs-pod.yaml" podhost apply -f "$pod"
	if wait_for 120 sh -c "podhost get pods -o json | jq -e '.items[] | select(.metadata.name == \"vmtest-cgroupfs\") | .status.phase == \"Running\"'"; then
		ok "cgroupfs: vmtest-cgroupfs Running"
	else
		notok "cgroupfs: vmtest-cgroupfs Running within 120s"
	fi
	pod_table
	local uid
	uid=$(pods_json | jq -r '.items[] | select(.metadata.name == "vmtest-cgroupfs") | .metadata.uid')
	check_pod_cgroups cgroupfs vmtest-cgroupfs
	check_top_cgroup cgroupfs /podhost 100 $((256 << 20))
	logcmd find /sys/fs/cgroup/podhost -maxdepth 3 -type d
	check "cgroupfs: podhost delete vmtest-cgroupfs" podhost delete vmtest-cgroupfs
	if wait_for 60 sh -c "! podhost get pods -o json | jq -e '.items[] | select(.metadata.name == \"vmtest-cgroupfs\")'"; then
		ok "cgroupfs: vmtest-cgroupfs gone"
	else
		notok "cgroupfs: vmtest-cgroupfs gone within 60s"
	fi
	if [ -n "$uid" ] && wait_for 30 sh -c "! test -e /sys/fs/cgroup$(fs_dir Burstable "$uid")"; then
		ok "cgroupfs: pod cgroup removed"
	else
		notok "cgroupfs: pod cgroup $(fs_dir Burstable "$uid") removed"
	fi

	cp "$STATE/config.yaml.orig" "$CONFIG"
	running_tasks >"$before"
	logcmd systemctl restart podhost.service
	wait_for 60 podhost_ready && ok "cgroupfs: podhost back on the original config" || notok "cgroupfs: podhost back on the original config"
	if wait_all_settled; then ok "cgroupfs: every pod Running after restoring the config"; else notok "cgroupfs: every pod Running after restoring the config"; fi
	same_tasks "cgroupfs: restoring the config keeps containers (same PIDs)" "$before"
}
