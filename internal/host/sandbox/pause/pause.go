// Package pause is the first process (PID 1) of a pod's shared PID
// namespace (shareProcessNamespace: true): what the kubelet's pause
// container is to such a pod, without a container. internal/host/sandbox
// starts it in a new PID namespace and pins that namespace; every container
// of the pod joins it. It only reaps the orphans the kernel gives it and
// waits, as pause.c (kubernetes build/pause/linux) does, with two
// differences: it ignores every signal it can be sent from inside the pod
// (pause.c exits on SIGINT/SIGTERM, which ends the namespace and every
// process in it; from the host SIGKILL still ends it, and that is how the
// sandbox's teardown stops it), and it drops root (uid/gid 65535, the pause
// image's user; no capabilities; not dumpable) so that a container's
// process cannot reach the host through /proc/1/root or /proc/1/cwd.
//
// It imports only the standard library: one runs per such pod, for the
// pod's whole life (docs/decisions.md).
package pause

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// Command is the argument the podhost binary itself dispatches to Main
// when podhost-pause is not installed (argv: [podhost, Command]).
const Command = "pause"

// Name is the file name of the pause binary (cmd/podhost-pause), installed
// beside podhost.
const Name = "podhost-pause"

// UID and GID are the ids Main runs as once started: the kubelet's pause
// image's user.
const (
	UID = 65535
	GID = 65535
)

// ExitNotInit is the exit code of Main run as anything but PID 1.
const ExitNotInit = 2

// prSetDumpable is PR_SET_DUMPABLE (linux/prctl.h).
const prSetDumpable = 4

// Main is the whole process: drops root, then reaps children until killed.
// It never returns.
func Main() {
	if os.Getpid() != 1 {
		fmt.Fprintln(os.Stderr, "podhost-pause: must run as PID 1 of a new PID namespace (podhost starts it)")
		os.Exit(ExitNotInit)
	}
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs) // every catchable signal: none ends the process
	if err := dropRoot(); err != nil {
		fmt.Fprintln(os.Stderr, "podhost-pause:", err)
		os.Exit(1)
	}
	Reap() // children that exited before Notify
	for range sigs {
		Reap()
	}
}

// dropRoot switches to UID/GID with no supplementary groups (which clears
// every capability) and makes the process not dumpable.
func dropRoot() error {
	if err := syscall.Setgroups(nil); err != nil {
		return fmt.Errorf("setgroups: %w", err)
	}
	if err := syscall.Setgid(GID); err != nil {
		return fmt.Errorf("setgid: %w", err)
	}
	if err := syscall.Setuid(UID); err != nil {
		return fmt.Errorf("setuid: %w", err)
	}
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prSetDumpable, 0, 0); e != 0 {
		return fmt.Errorf("prctl(PR_SET_DUMPABLE): %w", e)
	}
	return nil
}

// Reap collects every child that has exited (orphans of the namespace
// reparented to its init), without blocking. It returns how many.
func Reap() int {
	n := 0
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil || pid <= 0 {
			return n
		}
		n++
	}
}
