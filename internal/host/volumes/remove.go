package volumes

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
)

// unmountUnder unmounts every mount at or below dir, deepest first, as
// /proc/self/mountinfo lists them: the tmpfs of memory emptyDirs and data
// volumes, subPath bind mounts, and whatever a container propagated into a
// volume (a Bidirectional mount, runc's mount points of nested
// volumeMounts). It fails, naming them, if some are left: the caller must
// then remove nothing (the kubelet's CleanupMountPoint, then
// RemoveAllOneFilesystem).
func unmountUnder(dir string) error {
	root := dir
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		root = real
	}
	mounts, err := mountinfo.GetMounts(mountinfo.PrefixFilter(root))
	if err != nil {
		return fmt.Errorf("list mounts under %s: %w", root, err)
	}
	sort.SliceStable(mounts, func(i, j int) bool { return len(mounts[i].Mountpoint) > len(mounts[j].Mountpoint) })
	var errs []error
	for _, mi := range mounts {
		if err := unix.Unmount(mi.Mountpoint, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, fmt.Errorf("unmount %s: %w", mi.Mountpoint, err))
		}
	}
	left, err := mountinfo.GetMounts(mountinfo.PrefixFilter(root))
	if err != nil {
		return fmt.Errorf("list mounts under %s: %w", root, err)
	}
	if len(left) > 0 {
		names := make([]string, len(left))
		for i, mi := range left {
			names[i] = mi.Mountpoint
		}
		return fmt.Errorf("mounts left under %s, nothing removed: %s: %w", root, strings.Join(names, ", "), errors.Join(errs...))
	}
	return nil
}

// mountKey identifies the mount a file is on: its device and, where the
// kernel reports it (statx STATX_MNT_ID, Linux >= 5.8), its mount ID, which
// also tells apart a bind mount of a directory of the same filesystem.
type mountKey struct {
	dev, mnt uint64
}

// lstatMount returns the mountKey of path (not following a symlink) and
// whether it is a directory.
func lstatMount(path string) (mountKey, bool, error) {
	var stx unix.Statx_t
	err := unix.Statx(unix.AT_FDCWD, path, unix.AT_SYMLINK_NOFOLLOW|unix.AT_NO_AUTOMOUNT, unix.STATX_TYPE|unix.STATX_MNT_ID, &stx)
	if err != nil {
		return mountKey{}, false, &fs.PathError{Op: "statx", Path: path, Err: err}
	}
	k := mountKey{dev: unix.Mkdev(stx.Dev_major, stx.Dev_minor)}
	if stx.Mask&unix.STATX_MNT_ID != 0 {
		k.mnt = stx.Mnt_id
	}
	return k, stx.Mode&unix.S_IFMT == unix.S_IFDIR, nil
}

// removeAllOneFS removes path and everything below it, like
// rm -rf --one-file-system (the kubelet's RemoveAllOneFilesystem): it
// never descends into a mount point (one /proc/self/mountinfo lists, or a
// directory on another device or mount ID than path's parent directory;
// path itself may be one) and fails naming it instead, so nothing is ever
// deleted through a mount. It removes what it can and returns the first
// error. A missing path is success.
func removeAllOneFS(path string) error {
	path = filepath.Clean(path)
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	parent := filepath.Dir(path)
	if real, err := filepath.EvalSymlinks(parent); err == nil {
		parent = real // a symlinked state dir: walk the real path, as mountinfo lists it
	}
	path = filepath.Join(parent, filepath.Base(path))
	root, _, err := lstatMount(parent)
	if err != nil {
		return err
	}
	// mountinfo holds on every kernel: statx reports mount IDs only from
	// Linux 5.8, and a bind mount of the same filesystem has the same device.
	mounts, err := mountinfo.GetMounts(mountinfo.PrefixFilter(path))
	if err != nil {
		return fmt.Errorf("list mounts under %s: %w", path, err)
	}
	w := oneFSWalk{root: root, mountpoints: map[string]bool{}}
	for _, mi := range mounts {
		w.mountpoints[mi.Mountpoint] = true
	}
	return w.remove(path)
}

// oneFSWalk is removeAllOneFS's walk: root is the mount it may delete on.
type oneFSWalk struct {
	root        mountKey
	mountpoints map[string]bool
}

func (w oneFSWalk) remove(path string) error {
	if w.mountpoints[path] {
		return fmt.Errorf("cannot delete %s: it is a mount point", path)
	}
	rmErr := os.Remove(path)
	if rmErr == nil || errors.Is(rmErr, fs.ErrNotExist) {
		return nil
	}
	k, isDir, err := lstatMount(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if k != w.root {
		return fmt.Errorf("cannot delete %s: it is a mount point", path)
	}
	if !isDir {
		return rmErr
	}
	entries, err := os.ReadDir(path)
	for _, e := range entries {
		if cerr := w.remove(filepath.Join(path, e.Name())); err == nil {
			err = cerr
		}
	}
	if rerr := os.Remove(path); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) && err == nil {
		err = rerr
	}
	return err
}
