package fsquota

import (
	"errors"
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The kernel's ABI (linux/fs.h, linux/quota.h; golang.org/x/sys/unix has
// the quotactl_fd syscall number only). The ioctl numbers are those of
// the generic _IOC layout (amd64, arm64, riscv64, ...).
const (
	fsIocFsGetXattr    = 0x801c581f // _IOR('X', 31, struct fsxattr)
	fsIocFsSetXattr    = 0x401c5820 // _IOW('X', 32, struct fsxattr)
	fsXflagProjInherit = 0x00000200 // FS_XFLAG_PROJINHERIT: new files take the directory's project ID

	prjQuota  = 2        // PRJQUOTA
	qGetInfo  = 0x800005 // Q_GETINFO
	qGetQuota = 0x800007 // Q_GETQUOTA (XFS answers it too, as Q_XGETQUOTA)

	ext4Magic = 0xef53
	xfsMagic  = 0x58465342
)

// fsxattr is struct fsxattr (28 bytes).
type fsxattr struct {
	Xflags, Extsize, Nextents, Projid, Cowextsize uint32
	Pad                                           [8]byte
}

// dqblk is struct if_dqblk (72 bytes): space in bytes, inodes in units.
type dqblk struct {
	Bhardlimit, Bsoftlimit, Curspace, Ihardlimit, Isoftlimit, Curinodes, Btime, Itime uint64
	Valid                                                                             uint32
	_                                                                                 uint32
}

// dqinfo is struct if_dqinfo (24 bytes).
type dqinfo struct {
	Bgrace, Igrace uint64
	Flags, Valid   uint32
}

func qcmd(cmd, typ uint32) uintptr { return uintptr(cmd<<8 | typ&0xff) }

// System is the real kernel: ioctls on the directory and quotactl_fd
// (Linux >= 5.14) on the filesystem it is on.
type System struct{}

// Supported returns nil when dir is on ext4 or XFS with project quota
// accounting on (mounted prjquota), else why not.
func (System) Supported(dir string) error {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return fmt.Errorf("statfs %s: %w", dir, err)
	}
	if st.Type != ext4Magic && st.Type != xfsMagic {
		return fmt.Errorf("%s is not on ext4 or XFS (filesystem magic %#x)", dir, st.Type)
	}
	var info dqinfo
	err := withDir(dir, func(fd int) error { return quotactl(fd, qGetInfo, 0, unsafe.Pointer(&info)) })
	switch {
	case errors.Is(err, unix.ESRCH):
		return fmt.Errorf("%s: project quota accounting is off (not mounted prjquota): %w", dir, err)
	case errors.Is(err, unix.ENOSYS):
		return fmt.Errorf("%s: no quotactl_fd (Linux 5.14+) or no quota support in the kernel: %w", dir, err)
	case err != nil:
		return fmt.Errorf("%s: project quota state: %w", dir, err)
	}
	return nil
}

// Project returns dir's project ID and whether new files inherit it.
func (System) Project(dir string) (uint32, bool, error) {
	var a fsxattr
	err := withDir(dir, func(fd int) error { return ioctl(fd, fsIocFsGetXattr, unsafe.Pointer(&a)) })
	if err != nil {
		return 0, false, fmt.Errorf("project ID of %s: %w", dir, err)
	}
	return a.Projid, a.Xflags&fsXflagProjInherit != 0, nil
}

// SetProject gives dir project ID id and PROJINHERIT (id 0: none, and no
// inheritance), as chattr -p id +P.
func (System) SetProject(dir string, id uint32) error {
	err := withDir(dir, func(fd int) error {
		var a fsxattr
		if err := ioctl(fd, fsIocFsGetXattr, unsafe.Pointer(&a)); err != nil {
			return err
		}
		a.Projid = id
		if a.Xflags |= fsXflagProjInherit; id == 0 {
			a.Xflags &^= fsXflagProjInherit
		}
		return ioctl(fd, fsIocFsSetXattr, unsafe.Pointer(&a))
	})
	if err != nil {
		return fmt.Errorf("set project ID %d on %s: %w", id, dir, err)
	}
	return nil
}

// Usage reads project id's usage on the filesystem of dir: bytes and
// inodes. An ID the filesystem has no usage for is zero.
func (System) Usage(dir string, id uint32) (bytes, inodes int64, err error) {
	var q dqblk
	err = withDir(dir, func(fd int) error { return quotactl(fd, qGetQuota, id, unsafe.Pointer(&q)) })
	if errors.Is(err, unix.ENOENT) { // XFS: no dquot for the ID yet
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, fmt.Errorf("project quota %d on %s: %w", id, dir, err)
	}
	return int64(q.Curspace), int64(q.Curinodes), nil
}

// withDir runs f on a read-only descriptor of directory dir
// (not following a last symlink: the directory itself is what is set).
func withDir(dir string, f func(fd int) error) error {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: dir, Err: err}
	}
	defer unix.Close(fd)
	return f(fd)
}

func ioctl(fd int, req uintptr, arg unsafe.Pointer) error {
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), req, uintptr(arg)); e != 0 {
		return e
	}
	return nil
}

func quotactl(fd int, cmd, id uint32, addr unsafe.Pointer) error {
	if _, _, e := unix.Syscall6(unix.SYS_QUOTACTL_FD, uintptr(fd), qcmd(cmd, prjQuota), uintptr(id), uintptr(addr), 0, 0); e != 0 {
		return e
	}
	return nil
}
