#!/usr/bin/env bash
# Builds (once) the podhost appliance test image: a Debian bookworm guest with
# systemd as PID 1, pure cgroup v2, containerd 2.x under systemd, no network
# device, booted by scripts/vm/run.sh with Debian's kernel and an initramfs.
#
# Output (cached, rebuilt only when the inputs change):
#   $PODHOST_CACHE_DIR/vm/<key>/rootfs.img   raw ext4 image (never booted: run.sh
#                                            boots a qcow2 overlay on top of it)
#   $PODHOST_CACHE_DIR/vm/<key>/vmlinuz      Debian's kernel
#   $PODHOST_CACHE_DIR/vm/<key>/initrd.img   initramfs-tools initrd (MODULES=list)
#   $PODHOST_CACHE_DIR/vm/<key>/image.env    KERNEL_VERSION, CMDLINE, ...
# <key> hashes this script, scripts/vm/image/*, scripts/vm/packages.txt and the
# containerd binaries. The image dir is printed on stdout's last line.
#
# Nothing is installed into the host's /boot: the kernel package is downloaded
# with `apt-get download` and unpacked with dpkg-deb into the guest rootfs.
#
# Env: PODHOST_CACHE_DIR (default /var/cache/podhost-test), DEBIAN_MIRROR
# (default: the host's apt source for bookworm), VM_IMAGE_SIZE (default 4G),
# VM_FORCE_REBUILD=1.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
CACHE_DIR=${PODHOST_CACHE_DIR:-/var/cache/podhost-test}
VM_CACHE="$CACHE_DIR/vm"
SUITE=bookworm
IMAGE_SIZE=${VM_IMAGE_SIZE:-4G}
CMDLINE="root=/dev/vda rw console=ttyS0,115200 panic=-1 net.ifnames=0 systemd.show_status=1 systemd.unified_cgroup_hierarchy=1"

log() { echo "build-image: $*" >&2; }
die() {
	log "error: $*"
	exit 1
}

[[ $(id -u) == 0 ]] || die "must run as root (debootstrap, chroot)"

# --- host tools -------------------------------------------------------------
need=()
command -v qemu-system-x86_64 >/dev/null || need+=(qemu-system-x86)
command -v qemu-img >/dev/null || need+=(qemu-utils)
command -v debootstrap >/dev/null || need+=(debootstrap)
command -v mkfs.ext4 >/dev/null || need+=(e2fsprogs)
command -v flock >/dev/null || need+=(util-linux)
if ((${#need[@]})); then
	log "installing host packages: ${need[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >&2
	apt-get install -y -qq --no-install-recommends "${need[@]}" >&2
fi

# --- inputs and cache key -----------------------------------------------------
ctrd_bin=$("$repo/scripts/deps.sh" | tail -n1)
for b in containerd containerd-shim-runc-v2 ctr; do
	[[ -x "$ctrd_bin/$b" ]] || die "missing $ctrd_bin/$b (scripts/deps.sh)"
done
mapfile -t packages < <(sed -e 's/#.*//' -e 's/[[:space:]]//g' -e '/^$/d' "$here/packages.txt")

key=$(
	{
		cat "$here/build-image.sh" "$here/packages.txt"
		for f in "$here"/image/*; do echo "$f" && cat "$f"; done
		echo "$CMDLINE $IMAGE_SIZE"
		# containerd binaries: by size+mtime+path (hashing 100 MiB each run is slow)
		stat -c '%n %s %Y' "$ctrd_bin"/containerd "$ctrd_bin"/containerd-shim-runc-v2 "$ctrd_bin"/ctr
	} | sha256sum | cut -c1-16
)
out="$VM_CACHE/$key"

mkdir -p "$VM_CACHE"
exec 9>"$VM_CACHE/.lock"
flock 9

if [[ -f "$out/image.env" && ${VM_FORCE_REBUILD:-0} != 1 ]]; then
	log "cached image $out"
	echo "$out"
	exit 0
fi

# --- mirror -------------------------------------------------------------------
find_mirror() {
	local f uri
	# deb822 .sources: first URIs of a stanza whose Suites contain the suite
	for f in /etc/apt/sources.list.d/*.sources; do
		[[ -f $f ]] || continue
		uri=$(awk -v suite="$SUITE" '
			/^[[:space:]]*$/ { if (u != "" && s ~ ("(^| )" suite "( |$)") && t ~ /(^| )deb( |$)/) { print u; exit } u=""; s=""; t=""; next }
			/^URIs:/ { u=$2 } /^Suites:/ { $1=""; s=$0 } /^Types:/ { $1=""; t=$0 }
			END { if (u != "" && s ~ ("(^| )" suite "( |$)") && t ~ /(^| )deb( |$)/) print u }' "$f" | grep -v security | head -n1)
		[[ -n $uri ]] && echo "$uri" && return
	done
	# one-line format
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[[ -f $f ]] || continue
		uri=$(awk -v suite="$SUITE" '$1=="deb" { for (i=2;i<=NF;i++) if ($i !~ /^\[/ && $i ~ /:\/\//) { if ($(i+1)==suite) { print $i; exit } } }' "$f" | head -n1)
		[[ -n $uri ]] && echo "$uri" && return
	done
	return 1
}
MIRROR=${DEBIAN_MIRROR:-$(find_mirror || true)}
[[ -n $MIRROR ]] || die "no Debian $SUITE mirror in /etc/apt/sources.list*; set DEBIAN_MIRROR"

# --- build ---------------------------------------------------------------------
t0=$(date +%s)
work="$VM_CACHE/build.$$"
root="$work/root"
cleanup() {
	local m
	# unmount whatever we mounted in the chroot (deepest first)
	for m in "$root/dev/pts" "$root/dev" "$root/sys" "$root/proc"; do
		mountpoint -q "$m" 2>/dev/null && umount -l "$m"
	done
	rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work" "$VM_CACHE/debs" "$VM_CACHE/kernel"

log "debootstrap $SUITE from $MIRROR (${#packages[@]} extra packages)"
include=$(
	IFS=,
	echo "${packages[*]}"
)
debootstrap --variant=minbase --include="$include" --cache-dir="$VM_CACHE/debs" \
	"$SUITE" "$root" "$MIRROR" >"$work/debootstrap.log" 2>&1 || {
	tail -n 30 "$work/debootstrap.log" >&2
	die "debootstrap failed"
}

# Kernel: the version linux-image-amd64 points at in the host's apt lists.
kpkg=${VM_KERNEL_PACKAGE:-$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/ { print $2; exit }')}
if [[ -z $kpkg ]]; then
	apt-get update -qq >&2
	kpkg=$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-[0-9]/ { print $2; exit }')
fi
[[ -n $kpkg ]] || die "cannot resolve linux-image-amd64"
kver=${kpkg#linux-image-}
deb=$(ls "$VM_CACHE/kernel/${kpkg}_"*.deb 2>/dev/null | head -n1 || true)
if [[ -z $deb ]]; then
	log "downloading $kpkg"
	(cd "$VM_CACHE/kernel" && apt-get -o APT::Sandbox::User=root download -q "$kpkg" >&2)
	deb=$(ls "$VM_CACHE/kernel/${kpkg}_"*.deb | head -n1)
fi
log "kernel $kver ($deb)"
mkdir -p "$work/kernel"
dpkg-deb -x "$deb" "$work/kernel"
# Copy instead of extracting over the rootfs: the rootfs has merged /usr
# (lib -> usr/lib) and tar would replace that symlink with a directory.
mkdir -p "$root/boot" "$root/usr/lib/modules"
cp -a "$work/kernel/boot/." "$root/boot/"
for d in lib/modules usr/lib/modules; do
	[[ -d "$work/kernel/$d" ]] && cp -a "$work/kernel/$d/." "$root/usr/lib/modules/"
done
[[ -d "$root/usr/lib/modules/$kver" ]] || die "no modules for $kver in $kpkg"
# Drop hardware drivers a virtio guest never needs (most of the module tree).
moddir="$root/usr/lib/modules/$kver/kernel"
rm -rf "$moddir"/drivers/{gpu,media,infiniband,staging,net/wireless,net/ethernet,usb,bluetooth,isdn,iio,hid,input,video,mtd,scsi,ata,md,nvme,platform,hwmon,thunderbolt,edac,misc,mmc,spi,i2c,power,firewire,fpga,comedi,parport,pcmcia,leds,mfd,gnss,soundwire} \
	"$moddir"/sound "$moddir"/net/{bluetooth,mac80211,wireless,nfc,6lowpan,ieee802154}
chroot "$root" depmod -a "$kver"

# Initramfs: only the drivers to find and mount the root disk (and the 9p shares).
cat >"$root/etc/initramfs-tools/conf.d/podhost-vm.conf" <<'EOF'
MODULES=list
COMPRESS=gzip
EOF
cat >>"$root/etc/initramfs-tools/modules" <<'EOF'
virtio_pci
virtio_blk
ext4
9p
9pnet_virtio
EOF
mount -t proc proc "$root/proc"
chroot "$root" mkinitramfs -o "/boot/initrd.img-$kver" "$kver" >"$work/mkinitramfs.log" 2>&1 || {
	cat "$work/mkinitramfs.log" >&2
	die "mkinitramfs failed"
}
umount "$root/proc"

# --- configuration: no network config at all (-nic none) ----------------------
echo podhost-vm >"$root/etc/hostname"
printf '127.0.0.1\tlocalhost\n127.0.1.1\tpodhost-vm\n::1\tlocalhost ip6-localhost ip6-loopback\n' >"$root/etc/hosts"
cat >"$root/etc/fstab" <<'EOF'
# podhost appliance test image. Root is /dev/vda, mounted rw by the initramfs
# (kernel cmdline: root=/dev/vda rw); no fstab line for it, so the boot does not
# wait for udev to announce dev-vda.device (seconds under TCG).
# 9p shares from the host (scripts/vm/run.sh); absent when booted without them.
podhost-in   /mnt/in   9p    trans=virtio,version=9p2000.L,msize=524288,ro,nofail,x-systemd.device-timeout=5s  0 0
podhost-out  /mnt/out  9p    trans=virtio,version=9p2000.L,msize=524288,rw,nofail,x-systemd.device-timeout=5s  0 0
EOF
mkdir -p "$root/mnt/in" "$root/mnt/out"
# persistent journal: the second boot exports the first boot's shutdown too
mkdir -p "$root/var/log/journal"
mkdir -p "$root/etc/systemd/journald.conf.d"
printf '[Journal]\nStorage=persistent\nRateLimitBurst=0\n' >"$root/etc/systemd/journald.conf.d/podhost-vm.conf"
# nothing periodic during a test
for u in apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer e2scrub_reap.service fstrim.timer systemd-timesyncd.service; do
	ln -sf /dev/null "$root/etc/systemd/system/$u"
done

# containerd 2.x (appliance component) + CRI disabled
install -m 0755 "$ctrd_bin/containerd" "$ctrd_bin/containerd-shim-runc-v2" "$ctrd_bin/ctr" "$root/usr/local/bin/"
install -D -m 0644 "$here/image/containerd-config.toml" "$root/etc/containerd/config.toml"
install -m 0644 "$here/image/containerd.service" "$root/etc/systemd/system/containerd.service"
# test driver
install -D -m 0755 "$here/image/podhost-vmtest" "$root/usr/local/libexec/podhost-vmtest"
install -m 0644 "$here/image/podhost-vmtest.service" "$root/etc/systemd/system/podhost-vmtest.service"
systemctl --root="$root" enable containerd.service podhost-vmtest.service >&2

# small: no docs, man pages, apt lists
rm -rf "$root"/usr/share/{doc,man,info}/* "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/var/cache/apt/archives/*.deb

# --- image --------------------------------------------------------------------
mkdir -p "$work/out"
cp "$root/boot/vmlinuz-$kver" "$work/out/vmlinuz"
cp "$root/boot/initrd.img-$kver" "$work/out/initrd.img"
log "mkfs.ext4 -d ($(du -sh "$root" | cut -f1) of rootfs, image $IMAGE_SIZE sparse)"
mkfs.ext4 -q -F -L podhost-root -d "$root" "$work/out/rootfs.img" "$IMAGE_SIZE" >&2
chmod 0444 "$work/out/rootfs.img"
cat >"$work/out/image.env" <<EOF
KEY=$key
SUITE=$SUITE
MIRROR=$MIRROR
KERNEL_PACKAGE=$kpkg
KERNEL_VERSION=$kver
CONTAINERD_BIN=$ctrd_bin
CMDLINE="$CMDLINE"
BUILT_AT=$(date -u +%FT%TZ)
BUILD_SECONDS=$(($(date +%s) - t0))
EOF
rm -rf "$out"
mv "$work/out" "$out"
ln -sfn "$key" "$VM_CACHE/current"
# keep only the two newest images
find "$VM_CACHE" -mindepth 1 -maxdepth 1 -type d -regextype posix-extended -regex '.*/[0-9a-f]{16}' -printf '%T@ %p\n' |
	sort -rn | tail -n +3 | cut -d' ' -f2- | xargs -r rm -rf
log "built $out in $(($(date +%s) - t0))s"
echo "$out"
