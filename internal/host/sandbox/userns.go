package sandbox

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"syscall"

	"github.com/containerd/containerd/v2/core/mount"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/model/records"
)

// File and dir names of a pod's user namespace inside the sandbox dir.
const (
	fileUser  = "user"  // pinned user namespace (nsfs bind mount)
	dirIDMaps = "idmap" // idmapped mounts of the pod's bind-mount sources
)

// pinUserNS makes the pod's user namespace (hostUsers: false) with the
// recorded mapping, and with it the pod's network, IPC and UTS namespaces,
// which it then owns, as CRI's sandbox does: runc joins the user namespace
// first, and can only then join namespaces that namespace owns. The
// namespaces are made by a child that is stopped before it runs any code
// (ptrace at exec, as containerd's mount.GetUsernsFD), pinned on files, and
// killed.
func (m *Manager) pinUserNS(p *Paths, u *undoStack, pod *corev1.Pod, uns *records.UserNSRecord) error {
	if uns == nil {
		return nil
	}
	if pod.Spec.HostNetwork || pod.Spec.HostIPC || pod.Spec.HostPID {
		return errors.New("a pod with hostUsers: false cannot use the host's network, IPC or PID namespace")
	}
	p.User, p.IPC, p.UTS = filepath.Join(p.Dir, fileUser), filepath.Join(p.Dir, fileIPC), filepath.Join(p.Dir, fileUTS)
	netDir := netnsDirOf(p.Dir)
	if err := os.MkdirAll(netDir, 0o755); err != nil {
		return err
	}
	u.push(func() error { return removeDir(netDir) })
	var rnd [16]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return err
	}
	p.NetNS = filepath.Join(netDir, "cni-"+hex.EncodeToString(rnd[:])) // pkg/netns's naming: Remove checks it
	targets := map[string]string{"user": p.User, "ipc": p.IPC, "uts": p.UTS, "net": p.NetNS}
	for _, path := range targets {
		if err := os.WriteFile(path, nil, 0o444); err != nil {
			return err
		}
		u.push(func() error { return unmountRemove(path) })
	}
	if err := pinChildNamespaces(uns, targets); err != nil {
		return err
	}
	hostname, err := m.hostname(pod)
	if err != nil {
		return err
	}
	return setHostname(p.UTS, hostname)
}

// pinChildNamespaces starts a child in new user, network, IPC and UTS
// namespaces with uns's mapping for uids and gids, bind-mounts its
// namespaces onto targets (kind → file) and kills it.
func pinChildNamespaces(uns *records.UserNSRecord, targets map[string]string) error {
	idmap := []syscall.SysProcIDMap{{ContainerID: 0, HostID: int(uns.HostID), Size: int(uns.Size)}}
	// A traced child is waited for by the thread that started it.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	proc, err := os.StartProcess("/proc/self/exe", []string{"podhost[userns]"}, &os.ProcAttr{Sys: &syscall.SysProcAttr{
		Cloneflags:  unix.CLONE_NEWUSER | unix.CLONE_NEWNET | unix.CLONE_NEWIPC | unix.CLONE_NEWUTS,
		UidMappings: idmap, GidMappings: idmap,
		// setgroups stays allowed in the namespace: runc sets the
		// containers' supplementary groups (Go would write "deny").
		GidMappingsEnableSetgroups: true,
		Ptrace:                     true, // stopped before execve: it never runs
		Pdeathsig:                  syscall.SIGKILL,
	}})
	if err != nil {
		return fmt.Errorf("start user namespace holder: %w", err)
	}
	defer func() {
		_ = proc.Kill()
		_, _ = proc.Wait()
	}()
	for kind, target := range targets {
		src := fmt.Sprintf("/proc/%d/ns/%s", proc.Pid, kind)
		if err := unix.Mount(src, target, "none", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("bind-mount %s on %s: %w", src, target, err)
		}
	}
	return nil
}

// setHostname sets the hostname of the UTS namespace pinned at path.
func setHostname(path, hostname string) error {
	return onThrowawayThread(func() error {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWUTS); err != nil {
			return fmt.Errorf("setns uts: %w", err)
		}
		if err := unix.Sethostname([]byte(hostname)); err != nil {
			return fmt.Errorf("sethostname %q: %w", hostname, err)
		}
		return nil
	})
}

// IDMapped returns a path that shows src (a directory or a file) through
// the pod's user namespace: an idmapped mount (mount_setattr
// MOUNT_ATTR_IDMAP, containerd's mount.IDMapMount) below the sandbox dir,
// where a file the host sees owned by uid 0 is owned by HostID, so the
// pod's root (host uid HostID) owns it in the container. This is what the
// kubelet gets from runc 1.2's idmapped bind mounts (CRI's mount
// uidMappings); podhost makes the mount itself, so any runc with user
// namespaces can run the pod. One mount per source inode, made on first
// use; the sandbox's Remove unmounts them all. Only src's own mount is
// mapped (mounts below it are not part of the clone).
func (m *Manager) IDMapped(p Paths, src string) (string, error) {
	if p.User == "" || p.Dir == "" {
		return "", errors.New("sandbox: no user namespace")
	}
	var st unix.Stat_t
	if err := unix.Stat(src, &st); err != nil {
		return "", fmt.Errorf("idmap %s: %w", src, err)
	}
	sum := sha256.Sum256(fmt.Appendf(nil, "%s\x00%d\x00%d", src, st.Dev, st.Ino))
	target := filepath.Join(p.Dir, dirIDMaps, hex.EncodeToString(sum[:12]))
	if isMountPoint(target) {
		return target, nil
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o700); err != nil {
		return "", err
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		err := os.Mkdir(target, 0o700)
		if err != nil && !errors.Is(err, os.ErrExist) {
			return "", err
		}
	} else if err := os.WriteFile(target, nil, 0o600); err != nil {
		return "", err
	}
	f, err := os.Open(p.User)
	if err != nil {
		return "", fmt.Errorf("idmap %s: %w", src, err)
	}
	defer f.Close()
	if err := mount.IDMapMount(src, target, int(f.Fd())); err != nil {
		return "", fmt.Errorf("idmap %s: %w", src, err)
	}
	return target, nil
}

// isMountPoint tells whether path is the root of a mount (its own mount id
// differs from its parent's, or it is a bind mount of a file).
func isMountPoint(path string) bool {
	var st, parent unix.Statx_t
	const mask = unix.STATX_MNT_ID
	if unix.Statx(unix.AT_FDCWD, path, unix.AT_SYMLINK_NOFOLLOW, mask, &st) != nil {
		return false
	}
	if unix.Statx(unix.AT_FDCWD, filepath.Dir(path), unix.AT_SYMLINK_NOFOLLOW, mask, &parent) != nil {
		return false
	}
	return st.Mnt_id != parent.Mnt_id
}
