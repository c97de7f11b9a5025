package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
)

// pinIPCUTS pins new IPC and UTS namespaces (each unless the pod uses the
// host's) on files in the sandbox dir.
func (m *Manager) pinIPCUTS(p *Paths, u *undoStack, pod *corev1.Pod) error {
	if p.User != "" {
		return nil // pinned with the user namespace that owns them
	}
	targets := map[string]string{}
	flags := 0
	if !pod.Spec.HostIPC {
		p.IPC = filepath.Join(p.Dir, fileIPC)
		targets["ipc"], flags = p.IPC, flags|unix.CLONE_NEWIPC
	}
	if !pod.Spec.HostNetwork {
		p.UTS = filepath.Join(p.Dir, fileUTS)
		targets["uts"], flags = p.UTS, flags|unix.CLONE_NEWUTS
	}
	if flags == 0 {
		return nil
	}
	for _, path := range targets {
		if err := os.WriteFile(path, nil, 0o444); err != nil {
			return err
		}
		u.push(func() error { return unmountRemove(path) })
	}
	hostname, err := m.hostname(pod)
	if err != nil {
		return err
	}
	return pinNamespaces(flags, targets, hostname)
}

// pinNamespaces unshares flags on a dedicated OS thread, sets the hostname
// in a new UTS namespace, and bind-mounts the thread's namespaces
// (/proc/<pid>/task/<tid>/ns/<kind>) onto targets (kind → file). The thread
// dies with its goroutine (see onThrowawayThread), so no goroutine ever runs
// in the new namespaces afterwards.
func pinNamespaces(flags int, targets map[string]string, hostname string) error {
	return onThrowawayThread(func() error {
		if err := unix.Unshare(flags); err != nil {
			return fmt.Errorf("unshare: %w", err)
		}
		if flags&unix.CLONE_NEWUTS != 0 {
			if err := unix.Sethostname([]byte(hostname)); err != nil {
				return fmt.Errorf("sethostname %q: %w", hostname, err)
			}
		}
		for kind, target := range targets {
			src := fmt.Sprintf("/proc/%d/task/%d/ns/%s", os.Getpid(), unix.Gettid(), kind)
			if err := unix.Mount(src, target, "none", unix.MS_BIND, ""); err != nil {
				return fmt.Errorf("bind-mount %s on %s: %w", src, target, err)
			}
		}
		return nil
	})
}

// onThrowawayThread runs fn, which changes its thread's namespaces, on an
// OS thread that is locked and never unlocked: the Go runtime terminates
// such a thread when its goroutine returns. The process's main thread is
// the exception — the runtime cannot terminate it and would keep it in the
// changed namespaces (and /proc/self/ns/* would show them) — so fn never
// runs there: a goroutine that lands on the main thread holds it while a
// second goroutine, necessarily on another thread, runs fn.
func onThrowawayThread(fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if unix.Gettid() != os.Getpid() {
			errc <- fn()
			return
		}
		done := make(chan struct{})
		go func() {
			runtime.LockOSThread()
			errc <- fn()
			close(done)
		}()
		<-done
		runtime.UnlockOSThread() // the main thread was never changed
	}()
	return <-errc
}

// mountShm mounts the pod's /dev/shm tmpfs (unless the pod uses the host's IPC).
func (m *Manager) mountShm(p *Paths, u *undoStack, pod *corev1.Pod) error {
	if pod.Spec.HostIPC {
		return nil
	}
	shm := filepath.Join(p.Dir, dirShm)
	if err := os.Mkdir(shm, 0o755); err != nil {
		return err
	}
	u.push(func() error { return unmountRemove(shm) })
	p.Shm = shm
	data := fmt.Sprintf("mode=1777,size=%d", ShmSize)
	if err := unix.Mount("shm", shm, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, data); err != nil {
		return fmt.Errorf("mount shm tmpfs: %w", err)
	}
	return nil
}

// unmountRemove lazily unmounts path (every stacked mount) and deletes it.
func unmountRemove(path string) error {
	if err := unmountAll(path); err != nil {
		return err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove %s: %w", path, err)
	}
	return nil
}

func unmountAll(path string) error {
	for i := 0; i < 16; i++ {
		err := unix.Unmount(path, unix.MNT_DETACH)
		switch {
		case errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOENT):
			return nil // not (or no longer) a mount point / gone
		case err != nil:
			return fmt.Errorf("unmount %s: %w", path, err)
		}
	}
	return fmt.Errorf("unmount %s: still mounted after 16 unmounts", path)
}

// removeDir unmounts everything mounted at or below dir (deepest first) and
// then deletes it. RemoveAll only runs once nothing is mounted below, so it
// can never reach into a mounted filesystem.
func removeDir(dir string) error {
	if !filepath.IsAbs(dir) {
		return fmt.Errorf("remove %q: not an absolute path", dir)
	}
	real, err := filepath.EvalSymlinks(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("resolve %s: %w", dir, err)
	}
	mounts, err := mountinfo.GetMounts(mountinfo.PrefixFilter(real))
	if err != nil {
		return fmt.Errorf("read mountinfo: %w", err)
	}
	sort.Slice(mounts, func(i, j int) bool { return len(mounts[i].Mountpoint) > len(mounts[j].Mountpoint) })
	for _, mnt := range mounts {
		if err := unmountAll(mnt.Mountpoint); err != nil {
			return err
		}
	}
	if err := os.RemoveAll(real); err != nil {
		return fmt.Errorf("remove %s: %w", dir, err)
	}
	return nil
}

// isNSFS tells whether path is an nsfs mount (a pinned namespace).
func isNSFS(path string) bool {
	var st unix.Statfs_t
	if path == "" || unix.Statfs(path, &st) != nil {
		return false
	}
	return st.Type == unix.NSFS_MAGIC
}
