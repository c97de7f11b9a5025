#!/usr/bin/env bash
# The project quota check: runs internal/host/fsquota's tests, TestSystemPrjquota
# included (the real FS_IOC_FSSETXATTR and quotactl_fd calls), and
# internal/kubelet/eviction's BenchmarkEmptyDirMeasure (100 emptyDirs: walk vs
# quota, same run; BENCHTIME, default 50x) in the appliance
# test guest (scripts/vm/build-image.sh: Debian's kernel, which has the quota
# formats the CI machines' kernel lacks) on an ext4 image made here with
# mkfs.ext4 -O quota,project and loop-mounted there with prjquota.
#
#   scripts/vm/fsquota-check.sh        (root; prints the guest's log, exit 0 when it passed)
#
# One boot, ~1 min with TCG; the overlay disk and the staged share are removed.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
[[ $(id -u) == 0 ]] || { echo "fsquota-check: must run as root" >&2; exit 1; }
image=$("$here/build-image.sh" | tail -n1)
# shellcheck disable=SC1091
source "$image/image.env"
run_dir=$(mktemp -d)
trap 'rm -rf "$run_dir"' EXIT
IN=$run_dir/in OUT=$run_dir/out
mkdir -p "$IN/vm" "$IN/bin" "$OUT"
(cd "$repo" && CGO_ENABLED=0 go test -c -o "$IN/bin/fsquota.test" ./internal/host/fsquota &&
	CGO_ENABLED=0 go test -c -o "$IN/bin/eviction.test" ./internal/kubelet/eviction)
echo "${BENCHTIME:-50x}" >"$IN/benchtime"
truncate -s 64M "$IN/fs.img"
mkfs.ext4 -q -O quota,project "$IN/fs.img"
echo fsquota >"$IN/phase"
echo 300 >"$IN/timeout"
cat >"$IN/vm/guest-test.sh" <<'GUEST'
#!/bin/sh
exec >/mnt/out/fsquota.log 2>&1
set -x
uname -r
cp /mnt/in/fs.img /root/fs.img && mkdir -p /root/mnt
mount -o loop,prjquota /root/fs.img /root/mnt || { dmesg | tail -20; exit 1; }
PODHOST_TEST_PRJQUOTA_DIR=/root/mnt /mnt/in/bin/fsquota.test -test.v -test.count=1
rc=$?
PODHOST_TEST_PRJQUOTA_DIR=/root/mnt /mnt/in/bin/eviction.test -test.run '^$' -test.bench BenchmarkEmptyDirMeasure \
	-test.benchmem -test.benchtime "$(cat /mnt/in/benchtime)" || rc=1
umount /root/mnt
exit $rc
GUEST
chmod +x "$IN/vm/guest-test.sh"
qemu-img create -q -f qcow2 -F raw -b "$image/rootfs.img" "$run_dir/disk.qcow2"
timeout -k 5 600 qemu-system-x86_64 -accel tcg,thread=multi -cpu max -smp 2 -m 1024 -nodefaults -nic none -no-reboot \
	-display none -monitor none -serial "file:$run_dir/serial" \
	-kernel "$image/vmlinuz" -initrd "$image/initrd.img" -append "$CMDLINE no_timer_check" \
	-drive "file=$run_dir/disk.qcow2,if=virtio,format=qcow2,cache=unsafe" -device virtio-rng-pci \
	-virtfs "local,path=$IN,mount_tag=podhost-in,security_model=none,readonly=on" \
	-virtfs "local,path=$OUT,mount_tag=podhost-out,security_model=none" >/dev/null 2>&1 || true
cat "$OUT/fsquota.log" 2>/dev/null || { echo "fsquota-check: no log from the guest; console:" >&2; tail -30 "$run_dir/serial" >&2; exit 1; }
[[ $(cat "$OUT/fsquota.rc" 2>/dev/null) == 0 ]]
