package runtime

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const (
	testNS   = "podhost"
	testAddr = "/run/test/containerd.sock"
)

// fakeHost is a fake /proc and runc root.
type fakeHost struct {
	t    *testing.T
	proc string
	runc string
}

func newFakeHost(t *testing.T) *fakeHost {
	d := t.TempDir()
	return &fakeHost{t: t, proc: filepath.Join(d, "proc"), runc: filepath.Join(d, "runc")}
}

func (h *fakeHost) finder() procShims {
	return procShims{procRoot: h.proc, runcRoot: h.runc, namespace: testNS, address: testAddr}
}

func (h *fakeHost) write(path, content string) {
	h.t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		h.t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		h.t.Fatal(err)
	}
}

// process adds pid with parent ppid, comm and argv.
func (h *fakeHost) process(pid, ppid int, comm string, argv ...string) {
	dir := filepath.Join(h.proc, strconv.Itoa(pid))
	// The fields of a real stat line, 52 in all.
	// The fields of a real stat line, 52 in all; starttime (the 22nd) is
	// 1000+pid.
	h.write(filepath.Join(dir, "stat"), fmt.Sprintf("%d (%s) S %d %s %d %s\n", pid, comm, ppid,
		strings.TrimSpace(strings.Repeat("0 ", 17)), 1000+pid, strings.TrimSpace(strings.Repeat("0 ", 30))))
	h.write(filepath.Join(dir, "comm"), comm+"\n")
	h.write(filepath.Join(dir, "cmdline"), strings.Join(argv, "\x00")+"\x00")
}

// shim adds a containerd-shim-runc-v2 as containerd starts it.
func (h *fakeHost) shim(pid int, ns, addr string) {
	h.process(pid, 1, "containerd-shim", "/usr/bin/containerd-shim-runc-v2", "-namespace", ns, "-id", "first", "-address", addr)
}

func (h *fakeHost) container(id string, initPID int) {
	h.write(filepath.Join(h.runc, testNS, id, "state.json"),
		fmt.Sprintf(`{"id":%q,"init_process_pid":%d,"init_process_start":%d,"config":{}}`, id, initPID, 1000+initPID))
}

func TestProcShimsFindsTheGroupsShim(t *testing.T) {
	h := newFakeHost(t)
	h.shim(100, testNS, testAddr)
	h.process(101, 100, "sleep", "sleep", "100")
	h.process(102, 100, "sh", "sh")
	h.process(110, 100, "runc", "runc", "create") // runc create under way
	h.process(111, 110, "runc:[2:INIT]", "runc", "init")
	h.container("a", 101)
	h.container("b", 102)
	h.container("c", 111)
	pids, misses := h.finder().find([]string{"a", "b", "c", "gone"})
	if len(pids) != 1 || pids[0] != 100 {
		t.Fatalf("shims %v, want [100] (misses %v)", pids, misses)
	}
	if len(misses) != 1 || !errors.Is(misses[0], os.ErrNotExist) || !strings.Contains(misses[0].Error(), "gone") {
		t.Fatalf("misses %v, want the container without runc state", misses)
	}
}

// Nothing but this namespace's shim of this containerd is ever named.
func TestProcShimsRefusesOtherProcesses(t *testing.T) {
	h := newFakeHost(t)
	h.shim(200, "podhost-dev", testAddr) // another namespace
	h.shim(300, testNS, "/run/other/containerd.sock")
	h.process(400, 1, "containerd-shim", "/usr/bin/containerd-shim-runc-v1", "-namespace", testNS, "-address", testAddr)
	h.process(500, 1, "bash", "/usr/bin/containerd-shim-runc-v2", "-namespace", testNS, "-address", testAddr)
	h.process(600, 1, "containerd-shim", "/usr/bin/containerd-shim-runc-v2", "-namespace", testNS,
		"-namespace", "evil", "-address", testAddr) // two values: not positively ours
	h.process(1000, 1, "containerd", "containerd") // the init's parent is no shim at all
	for i, parent := range []int{200, 300, 400, 500, 600, 1000} {
		id := fmt.Sprintf("c%d", i)
		h.process(2000+i, parent, "sleep", "sleep")
		h.container(id, 2000+i)
		if pids, misses := h.finder().find([]string{id}); len(pids) != 0 || len(misses) != 1 {
			t.Errorf("init under process %d: shims %v misses %v, want none and a miss", parent, pids, misses)
		}
	}
	// Too far up: not the shim of this container.
	h.shim(700, testNS, testAddr)
	ppid := 700
	for pid := 701; pid <= 700+maxShimDepth+1; pid++ {
		h.process(pid, ppid, "sh", "sh")
		ppid = pid
	}
	h.container("deep", ppid)
	if pids, _ := h.finder().find([]string{"deep"}); len(pids) != 0 {
		t.Errorf("shim %d levels up found: %v", maxShimDepth+1, pids)
	}
}

func TestProcShimsBadState(t *testing.T) {
	h := newFakeHost(t)
	h.shim(100, testNS, testAddr)
	h.process(101, 100, "a) S 5 (x", "x") // a comm that fakes a parent
	h.write(filepath.Join(h.runc, testNS, "huge", "state.json"), `{"init_process_pid":101,"x":"`+strings.Repeat("x", maxRuncState)+`"}`)
	h.write(filepath.Join(h.runc, testNS, "junk", "state.json"), `{"init_process_pid":"101"`)
	h.write(filepath.Join(h.runc, testNS, "zero", "state.json"), `{"init_process_pid":1}`)
	h.write(filepath.Join(h.runc, testNS, "reused", "state.json"), `{"init_process_pid":101,"init_process_start":5}`) // 101 started at 1101
	h.container("odd-comm", 101)
	for _, id := range []string{"huge", "junk", "zero", "reused", "../" + testNS + "/zero", "", ".."} {
		if pids, misses := h.finder().find([]string{id}); len(pids) != 0 || len(misses) != 1 {
			t.Errorf("container %q: shims %v misses %v, want none and a miss", id, pids, misses)
		}
	}
	if pids, misses := h.finder().find([]string{"odd-comm"}); len(pids) != 1 || pids[0] != 100 {
		t.Errorf("init with ') ' in its comm: shims %v misses %v, want [100]", pids, misses)
	}
}

// killShim signals a real process only when /proc shows it is the shim.
func TestKillShimOnlyKillsTheShim(t *testing.T) {
	h := newFakeHost(t)
	r := &Runtime{ns: testNS, shims: h.finder()}
	start := func() *exec.Cmd {
		cmd := exec.Command("sleep", "300")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd
	}
	other := start()
	h.process(other.Process.Pid, 1, "sleep", "sleep", "300")
	if err := r.killShim(other.Process.Pid); err == nil {
		t.Fatal("killShim killed a process that is not a shim")
	}
	if err := other.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("the process that is not a shim is gone: %v", err)
	}

	shim := start()
	h.shim(shim.Process.Pid, testNS, testAddr)
	if err := r.killShim(shim.Process.Pid); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- shim.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("shim ended with %v, want SIGKILL", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the shim was not killed")
	}
}
