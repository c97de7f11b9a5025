package sandbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/podhost/podhost/internal/host/sandbox/pause"
)

// TestMain makes the test binary its own pause fallback: WithPause(test
// binary) finds no podhost-pause beside it and runs it with pause.Command.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == pause.Command {
		pause.Main()
	}
	os.Exit(m.Run())
}

// procStatus returns the value of key in /proc/<pid>/status ("" if gone).
func procStatus(pid int, key string) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return ""
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, key+":"); ok {
			return strings.Join(strings.Fields(v), " ")
		}
	}
	return ""
}

func TestSharedPIDNamespace(t *testing.T) {
	needRoot(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	m, _ := testManager(t)
	WithPause(exe)(m)
	pod := testPod("shared")
	yes := true
	pod.Spec.ShareProcessNamespace = &yes
	p, err := m.Create(context.Background(), "sb-pid", pod, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.PID != filepath.Join(p.Dir, filePID) || !isNSFS(p.PID) || !PIDNamespaceAlive(p.PID) {
		t.Fatalf("PID = %q: want the pinned namespace %s with a live PID 1", p.PID, filepath.Join(p.Dir, filePID))
	}
	pid := pausePID(p.Dir)
	// PID 1 of the pinned namespace, no longer root, in no container.
	if got := procStatus(pid, "NSpid"); got != strconv.Itoa(pid)+" 1" {
		t.Errorf("pause %d NSpid = %q, want %d 1", pid, got, pid)
	}
	if link, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", pid)); link != fmt.Sprintf("pid:[%d]", inode(t, p.PID)) {
		t.Errorf("pause's namespace %s is not the pinned one (inode %d)", link, inode(t, p.PID))
	}
	waitStatus(t, pid, "Uid", "65535 65535 65535 65535")
	if got := procStatus(pid, "CapEff"); got != "0000000000000000" {
		t.Errorf("pause CapEff = %s, want none", got)
	}
	// Signals from inside the namespace cannot end it: PID 1 only gets the
	// signals it handles, and it handles every one (none ends it).
	caught, err := strconv.ParseUint(procStatus(pid, "SigCgt"), 16, 64)
	if err != nil {
		t.Fatal(err)
	}
	for _, sig := range []unix.Signal{unix.SIGTERM, unix.SIGINT, unix.SIGHUP, unix.SIGQUIT, unix.SIGUSR1} {
		if caught&(1<<(sig-1)) == 0 {
			t.Errorf("pause does not handle %v (SigCgt %x): sent from inside the pod it would end the namespace", sig, caught)
		}
	}
	if err := m.Remove(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	// Remove returns once the pause process has exited; startPause's
	// goroutine reaps it (until then /proc/<pid> is a zombie's, which
	// still shows its PID namespace).
	if st := procState(pid); st != "" && st != "Z" {
		t.Errorf("pause %d still running after Remove (state %s)", pid, st)
	}
	deadline := time.Now().Add(30 * time.Second)
	for procState(pid) != "" && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if st := procState(pid); st != "" {
		t.Errorf("pause %d not reaped 30 s after Remove (state %s)", pid, st)
	}
	if _, err := os.Stat(p.Dir); !os.IsNotExist(err) {
		t.Errorf("sandbox dir left: %v", err)
	}
}

// waitStatus waits until /proc/<pid>/status's key reads want (the pause
// process drops root right after it starts).
func waitStatus(t *testing.T, pid int, key, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for procStatus(pid, key) != want {
		if time.Now().After(deadline) {
			t.Fatalf("pause %d %s = %q, want %q", pid, key, procStatus(pid, key), want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestSharedPIDNamespaceRollback(t *testing.T) {
	needRoot(t)
	m, runDir := testManager(t)
	WithPause("")(m) // no pause command: Create fails and leaves nothing
	pod := testPod("shared")
	yes := true
	pod.Spec.ShareProcessNamespace = &yes
	if _, err := m.Create(context.Background(), "sb-pid", pod, nil); err == nil || !strings.Contains(err.Error(), "pause") {
		t.Fatalf("Create without a pause command: err = %v", err)
	}
	if ents, _ := os.ReadDir(filepath.Join(runDir, "sandboxes")); len(ents) != 0 {
		t.Errorf("left behind: %v", ents)
	}
}

// procState is the state letter of /proc/<pid>/stat ("" when gone).
func procState(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+3 <= len(s) {
		return s[i+2 : i+3]
	}
	return ""
}
