package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/containerd/containerd/v2/core/mount"
	"golang.org/x/sys/unix"
)

// probeID is the host id the probe's user namespace maps container root to.
const probeID = 1 << 16

// CheckUserNS tells whether pods with hostUsers: false can run on this
// host, as podhost runs them: the kernel makes user namespaces, and
// idmapped mounts (Linux 5.12+, per filesystem) work on each of dirs'
// filesystems (the pods' volumes and termination logs, the sandbox files)
// and on tmpfs (configMap and secret volumes: Linux 6.3+). It returns what
// it checked ("ext4 (/var/lib/podhost/pods), tmpfs"), or an error naming
// what is missing. A dir that does not exist yet is checked at its
// nearest existing parent. It makes and removes a temporary directory in
// each dir.
func CheckUserNS(dirs ...string) (string, error) {
	uns, err := mount.GetUsernsFD(fmt.Sprintf("0:%d:65536", probeID), fmt.Sprintf("0:%d:65536", probeID))
	if err != nil {
		return "", fmt.Errorf("the kernel cannot make user namespaces: %w", err)
	}
	defer uns.Close()
	var checked []string
	for i, d := range dirs {
		d = existingParent(d)
		fs, err := probeIDMap(d, int(uns.Fd()), false)
		if err != nil {
			return "", err
		}
		checked = append(checked, fmt.Sprintf("%s (%s)", fs, d))
		if i == 0 {
			if _, err := probeIDMap(d, int(uns.Fd()), true); err != nil {
				return "", err
			}
			checked = append(checked, "tmpfs")
		}
	}
	return strings.Join(checked, ", "), nil
}

// probeIDMap idmaps a fresh directory below dir (a fresh tmpfs mounted
// there with tmpfs) and checks that its owner shows mapped. It returns the
// filesystem's name.
func probeIDMap(dir string, usernsFd int, tmpfs bool) (fsName string, err error) {
	td, err := os.MkdirTemp(dir, ".podhost-userns-check-")
	if err != nil {
		return "", fmt.Errorf("userns check: %w", err)
	}
	defer func() {
		if rerr := removeDir(td); rerr != nil && err == nil {
			err = fmt.Errorf("userns check: %w", rerr)
		}
	}()
	src, dst := filepath.Join(td, "src"), filepath.Join(td, "dst")
	for _, d := range []string{src, dst} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return "", fmt.Errorf("userns check: %w", err)
		}
	}
	if tmpfs {
		if err := unix.Mount("tmpfs", src, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0700,size=64k"); err != nil {
			return "", fmt.Errorf("userns check: mount tmpfs: %w", err)
		}
	}
	fsName = fsTypeName(src)
	if err := mount.IDMapMount(src, dst, usernsFd); err != nil {
		return fsName, fmt.Errorf("no idmapped mounts on %s (%s): %w", fsName, dir, errors.Unwrap(err))
	}
	var st unix.Stat_t
	if err := unix.Stat(dst, &st); err != nil {
		return fsName, fmt.Errorf("userns check: %w", err)
	}
	if st.Uid != probeID {
		return fsName, fmt.Errorf("idmapped mount on %s (%s) shows owner %d, want %d", fsName, dir, st.Uid, probeID)
	}
	return fsName, nil
}

// existingParent is path, or its nearest existing parent.
func existingParent(path string) string {
	for p := filepath.Clean(path); ; p = filepath.Dir(p) {
		if _, err := os.Stat(p); err == nil || p == filepath.Dir(p) {
			return p
		}
	}
}

// fsTypeName names path's filesystem (statfs magic).
func fsTypeName(path string) string {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return "unknown filesystem"
	}
	names := map[int64]string{
		unix.EXT4_SUPER_MAGIC: "ext4", unix.XFS_SUPER_MAGIC: "xfs", unix.BTRFS_SUPER_MAGIC: "btrfs",
		unix.TMPFS_MAGIC: "tmpfs", unix.OVERLAYFS_SUPER_MAGIC: "overlayfs", unix.F2FS_SUPER_MAGIC: "f2fs",
		unix.SQUASHFS_MAGIC: "squashfs", unix.NFS_SUPER_MAGIC: "nfs", unix.RAMFS_MAGIC: "ramfs", 0x65735546: "fuse",
	}
	if n, ok := names[int64(st.Type)]; ok {
		return n
	}
	return fmt.Sprintf("filesystem 0x%x", st.Type)
}
