package volumes

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/host/spec"
)

// subPathDir is where a pod's subPath bind mounts live, below its PodDir:
// volume-subpaths/<volume>/<container>/<volumeMount index>, as the kubelet's.
const subPathDir = "volume-subpaths"

// PrepareSubPath returns the host path to bind-mount for one volumeMount's
// subPath, as the kubelet's makeMounts does (pkg/volume/util/subpath):
//
//   - a missing subPath is created as directories with the mode of the
//     volume's root (SafeMakeDir): each one with mkdirat below a directory
//     opened without following symlinks, so a symlink planted in the volume
//     never makes podhost create anything outside it;
//   - a subPath that resolves (through symlinks) outside the volume is
//     refused;
//   - the resolved path is opened from the volume's root one component at a
//     time with O_NOFOLLOW, and that fd is bind-mounted at
//     <pod dir>/volume-subpaths/<volume>/<container>/<index>, which is
//     returned (PrepareSafeSubpath): what runc mounts is the inode that was
//     checked, whatever the pod does to the volume's paths afterwards
//     (CVE-2017-1002101). Cleanup unmounts them.
func (m *Manager) PrepareSubPath(uid types.UID, sp spec.SubPathMount) (string, error) {
	for _, name := range []string{sp.Volume, sp.Container} {
		if name == "" || name == "." || name == ".." || strings.ContainsRune(name, filepath.Separator) {
			return "", fmt.Errorf("invalid volume or container name %q", name)
		}
	}
	fd, _, err := openSubPath(sp.VolumePath, sp.Path)
	if err != nil {
		return "", err
	}
	defer unix.Close(fd)
	target := filepath.Join(m.PodDir(uid), subPathDir, sp.Volume, sp.Container, strconv.Itoa(sp.Index))
	if err := bindFD(fd, target); err != nil {
		return "", fmt.Errorf("subPath %q: %w", sp.Path, err)
	}
	return target, nil
}

// openSubPath creates subPath sub of the volume at base if missing and
// returns an O_PATH fd of it and its resolved path; it fails if sub
// resolves outside the volume. sub must be relative and free of ".."
// components (spec checks it).
func openSubPath(base, sub string) (int, string, error) {
	realBase, err := filepath.EvalSymlinks(base)
	if err != nil {
		return -1, "", fmt.Errorf("resolve volume path: %w", err)
	}
	full := filepath.Join(realBase, sub)
	if _, err := os.Stat(full); errors.Is(err, os.ErrNotExist) {
		if err := safeMakeDir(realBase, sub); err != nil {
			return -1, "", fmt.Errorf("create subPath %q: %w", sub, err)
		}
	} else if err != nil {
		return -1, "", fmt.Errorf("subPath %q: %w", sub, err)
	}
	resolved, err := filepath.EvalSymlinks(full)
	if err != nil {
		return -1, "", fmt.Errorf("subPath %q: %w", sub, err)
	}
	if !within(realBase, resolved) {
		return -1, "", fmt.Errorf("subPath %q resolves outside its volume", sub)
	}
	fd, err := openNoSymlinks(realBase, resolved)
	if err != nil {
		return -1, "", fmt.Errorf("subPath %q: %w", sub, err)
	}
	return fd, resolved, nil
}

// bindFD bind-mounts the file or directory open as fd at target, replacing
// what an earlier attempt of the container mounted there.
func bindFD(fd int, target string) error {
	if err := os.MkdirAll(filepath.Dir(target), 0o750); err != nil {
		return err
	}
	if mounted, err := mountinfo.Mounted(target); err == nil && mounted {
		if err := unix.Unmount(target, unix.MNT_DETACH); err != nil {
			return fmt.Errorf("unmount %s: %w", target, err)
		}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if err := makeTarget(target, st.Mode&unix.S_IFMT == unix.S_IFDIR); err != nil {
		return err
	}
	src := "/proc/self/fd/" + strconv.Itoa(fd)
	if err := unix.Mount(src, target, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind-mount %s: %w", target, err)
	}
	return nil
}

// makeTarget makes target an empty directory (dir) or an empty file, the
// kind a bind mount of the subPath needs.
func makeTarget(target string, dir bool) error {
	fi, err := os.Lstat(target)
	if err == nil && fi.IsDir() == dir {
		return nil
	}
	if err == nil {
		if err := os.Remove(target); err != nil {
			return err
		}
	}
	if dir {
		return os.Mkdir(target, 0o750)
	}
	return os.WriteFile(target, nil, 0o640)
}

// within reports whether p is base or below it (both clean and absolute),
// as the kubelet's PathWithinBase: the relative path from base does not
// start with "..". A volume at / holds every path.
func within(base, p string) bool {
	rel, err := filepath.Rel(base, p)
	if err != nil {
		return false
	}
	return rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// safeMakeDir creates the missing directories of sub below base (resolved),
// like the kubelet's doSafeMakeDir: the existing prefix is resolved and must
// stay inside base; each new directory is made with mkdirat in its parent's
// fd and opened with O_NOFOLLOW, then given base's mode (no umask).
func safeMakeDir(base, sub string) error {
	fi, err := os.Stat(base)
	if err != nil {
		return err
	}
	perm := unixPerm(fi.Mode())
	parts := strings.Split(filepath.Clean(sub), string(filepath.Separator))
	n := 0
	for ; n < len(parts); n++ {
		if _, err := os.Stat(filepath.Join(base, filepath.Join(parts[:n+1]...))); err != nil {
			break
		}
	}
	existing, err := filepath.EvalSymlinks(filepath.Join(base, filepath.Join(parts[:n]...)))
	if err != nil {
		return err
	}
	if !within(base, existing) {
		return fmt.Errorf("%s is outside the volume", filepath.Join(parts[:n]...))
	}
	fd, err := openNoSymlinks(base, existing)
	if err != nil {
		return err
	}
	for _, dir := range parts[n:] {
		child, err := mkdirOpen(fd, dir, perm)
		_ = unix.Close(fd)
		if err != nil {
			return err
		}
		fd = child
	}
	return unix.Close(fd)
}

// mkdirOpen makes directory name in parent, opens it without following a
// symlink and sets its mode to perm.
func mkdirOpen(parent int, name string, perm uint32) (int, error) {
	if err := unix.Mkdirat(parent, name, perm); err != nil {
		return -1, fmt.Errorf("mkdir %s: %w", name, err)
	}
	fd, err := unix.Openat(parent, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("open %s: %w", name, err)
	}
	if err := unix.Fchmod(fd, perm); err != nil {
		_ = unix.Close(fd)
		return -1, fmt.Errorf("chmod %s: %w", name, err)
	}
	return fd, nil
}

// openNoSymlinks opens p (below base, both resolved) with O_PATH, walking
// from base one component at a time with O_NOFOLLOW: it fails if any
// component is a symlink (the kubelet's doSafeOpen).
func openNoSymlinks(base, p string) (int, error) {
	fd, err := unix.Open(base, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("open %s: %w", base, err)
	}
	rel, err := filepath.Rel(base, p)
	if err != nil || rel == "." {
		return fd, err
	}
	cur := base
	for _, seg := range strings.Split(rel, string(filepath.Separator)) {
		cur = filepath.Join(cur, seg)
		child, err := unix.Openat(fd, seg, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		_ = unix.Close(fd)
		if err != nil {
			return -1, fmt.Errorf("open %s: %w", cur, err)
		}
		var st unix.Stat_t
		if err := unix.Fstat(child, &st); err != nil || st.Mode&unix.S_IFMT == unix.S_IFLNK {
			_ = unix.Close(child)
			return -1, fmt.Errorf("%s is a symlink or unreadable (%v)", cur, err)
		}
		fd = child
	}
	return fd, nil
}

// unixPerm turns a FileMode into the mode bits of chmod(2).
func unixPerm(m os.FileMode) uint32 {
	perm := uint32(m.Perm())
	if m&os.ModeSetuid != 0 {
		perm |= unix.S_ISUID
	}
	if m&os.ModeSetgid != 0 {
		perm |= unix.S_ISGID
	}
	if m&os.ModeSticky != 0 {
		perm |= unix.S_ISVTX
	}
	return perm
}
