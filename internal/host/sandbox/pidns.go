package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/host/sandbox/pause"
)

// File names of a shared PID namespace inside the sandbox dir.
const (
	filePID      = "pid"       // pinned PID namespace (nsfs bind mount)
	filePausePID = "pause.pid" // "<pid> <start time>" of its PID 1
)

// pauseStopTimeout bounds the wait for a killed PID 1 (and with it every
// process of its namespace) to be gone.
const pauseStopTimeout = 10 * time.Second

// WithPause sets the podhost executable: PID 1 of a pod's shared PID
// namespace is ResolvePause(exe), resolved when the first such pod needs
// it; without it such a pod's sandbox fails.
func WithPause(exe string) Option {
	return func(m *Manager) {
		m.pause = sync.OnceValue(func() []string {
			if exe == "" {
				return nil
			}
			return ResolvePause(exe, m.log)
		})
	}
}

// ResolvePause returns the pause command: pause.Name beside exe (the
// podhost executable), else exe itself with pause.Command, which podhost
// dispatches before anything else, with a warning (a whole podhost per
// such pod: more memory), as the log driver's fallback.
func ResolvePause(exe string, log *slog.Logger) []string {
	want := filepath.Join(filepath.Dir(exe), pause.Name)
	if st, err := os.Stat(want); err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0 {
		return []string{want}
	}
	log.Warn("pause binary not found: pods with shareProcessNamespace will run podhost itself as their PID 1 (more memory per pod)",
		"missing", want, "fallback", exe+" "+pause.Command)
	return []string{exe, pause.Command}
}

// SharesPIDNamespace tells whether pod's containers share one PID
// namespace of their own (shareProcessNamespace: true, not hostPID).
func SharesPIDNamespace(pod *corev1.Pod) bool {
	s := pod.Spec.ShareProcessNamespace
	return s != nil && *s && !pod.Spec.HostPID
}

// pinPIDNS starts the pod's PID 1 (the pause command) in a new PID
// namespace, records it in pause.pid and pins the namespace on the pid
// file, for a pod that shares its PID namespace. The namespace lives as
// long as that process: it is started in a session of its own, not as a
// child podhost's death would kill, so it survives podhost's restarts
// (docs/decisions.md).
func (m *Manager) pinPIDNS(p *Paths, u *undoStack, pod *corev1.Pod) error {
	if !SharesPIDNamespace(pod) {
		return nil
	}
	if p.User != "" {
		return errors.New("a pod with hostUsers: false cannot share a PID namespace")
	}
	var argv []string
	if m.pause != nil {
		argv = m.pause()
	}
	if len(argv) == 0 {
		return errors.New("no pause command to run as the pod's PID 1")
	}
	dir, ns := p.Dir, filepath.Join(p.Dir, filePID)
	if err := os.WriteFile(ns, nil, 0o444); err != nil {
		return err
	}
	u.push(func() error { return unmountRemove(ns) })
	u.push(func() error { return stopPause(dir) })
	pid, err := startPause(dir, argv)
	if err != nil {
		return err
	}
	src := fmt.Sprintf("/proc/%d/ns/pid", pid)
	if err := unix.Mount(src, ns, "none", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind-mount %s on %s: %w", src, ns, err)
	}
	p.PID = ns
	return nil
}

// startPause starts argv as PID 1 of a new PID namespace and writes its
// pid and start time to dir/pause.pid. A goroutine waits for it, so it
// never stays a zombie while this podhost runs.
func startPause(dir string, argv []string) (int, error) {
	null, err := os.Open(os.DevNull)
	if err != nil {
		return 0, err
	}
	defer null.Close()
	proc, err := os.StartProcess(argv[0], append([]string{pause.Name}, argv[1:]...), &os.ProcAttr{
		Dir:   "/",
		Env:   []string{},
		Files: []*os.File{null, null, null},
		Sys:   &syscall.SysProcAttr{Cloneflags: unix.CLONE_NEWPID, Setsid: true},
	})
	if err != nil {
		return 0, fmt.Errorf("start %s: %w", argv[0], err)
	}
	go func() { _, _ = proc.Wait() }()
	start, err := startTime(proc.Pid)
	if err == nil {
		err = writeAtomic(filepath.Join(dir, filePausePID), fmt.Appendf(nil, "%d %d\n", proc.Pid, start))
	}
	if err != nil {
		_ = proc.Kill()
		return 0, fmt.Errorf("record pause process: %w", err)
	}
	return proc.Pid, nil
}

// startTime is field 22 of /proc/<pid>/stat (clock ticks after boot): with
// the pid, it names one process for good. A zombie has none.
func startTime(pid int) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 20 {
		return 0, fmt.Errorf("/proc/%d/stat: too short", pid)
	}
	if f[0] == "Z" || f[0] == "X" {
		return 0, fmt.Errorf("pid %d: exited", pid)
	}
	return strconv.ParseUint(f[19], 10, 64)
}

// pausePID returns the recorded PID 1 of the sandbox in dir while that
// very process (same start time) is alive; 0 when it is gone or none was
// recorded.
func pausePID(dir string) int {
	b, err := os.ReadFile(filepath.Join(dir, filePausePID))
	if err != nil {
		return 0
	}
	var pid int
	var start uint64
	if _, err := fmt.Sscanf(string(b), "%d %d", &pid, &start); err != nil || pid <= 1 {
		return 0
	}
	if got, err := startTime(pid); err != nil || got != start {
		return 0
	}
	return pid
}

// PIDNamespaceAlive tells whether the pinned PID namespace at path still
// has its PID 1: a namespace whose first process died takes no new one,
// so the pod's sandbox must be made again (the kubelet's dead sandbox).
func PIDNamespaceAlive(path string) bool {
	return isNSFS(path) && pausePID(filepath.Dir(path)) != 0
}

// stopPause kills the recorded PID 1 of the sandbox in dir — the kernel
// then kills every process left in its namespace — and waits until it is
// gone. Nothing recorded, or gone already: nil.
func stopPause(dir string) error {
	b, err := os.ReadFile(filepath.Join(dir, filePausePID))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	var pid int
	if _, err := fmt.Sscanf(string(b), "%d", &pid); err != nil || pid <= 1 {
		return nil
	}
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ESRCH) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("pidfd of pause %d: %w", pid, err)
	}
	defer unix.Close(fd)
	if pausePID(dir) != pid { // the pidfd is the recorded process, checked after it was opened
		return nil
	}
	if err := unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0); err != nil && !errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("kill pause %d: %w", pid, err)
	}
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	deadline := time.Now().Add(pauseStopTimeout)
	for time.Now().Before(deadline) {
		n, err := unix.Poll(fds, int(time.Until(deadline)/time.Millisecond)+1)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return fmt.Errorf("wait for pause %d: %w", pid, err)
		}
		if n > 0 {
			return nil
		}
	}
	return fmt.Errorf("pause %d still running %s after SIGKILL", pid, pauseStopTimeout)
}
