//go:build integration

package integration

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/config"
	"github.com/podhost/podhost/internal/host/runtime"
	"github.com/podhost/podhost/internal/testenv"
)

// TestShimKillRestartsItsGroup: pods share containerd shims (the default
// shimGroupSize, 8: nine pods in two shims). kill -9 of the shim of eight of
// them ends their containers; podhost notices from containerd's exit events
// and restarts every one of them within 2 s; the pod in the other shim is
// not touched.
func TestShimKillRestartsItsGroup(t *testing.T) {
	d := newPodhostd(t)
	const pods, group = 9, config.DefaultShimGroupSize
	for i := 0; i < pods; i++ {
		d.writeManifest(fmt.Sprintf("g%d.yaml", i), idlePod(fmt.Sprintf("g%d", i)))
	}
	d.start()
	d.waitAllRunning(pods, 2*time.Minute)

	byShim := map[int][]string{}
	oldPID := map[string]int{}
	for i := 0; i < pods; i++ {
		name := fmt.Sprintf("g%d", i)
		pid := containerPID(t, d.waitRunning(name), "main")
		oldPID[name] = pid
		byShim[testenv.ParentPID(pid)] = append(byShim[testenv.ParentPID(pid)], name)
	}
	var shim int
	var members, other []string
	for sh, names := range byShim {
		switch len(names) {
		case group:
			shim, members = sh, names
		case pods - group:
			other = names
		}
	}
	if shim == 0 || len(other) != pods-group {
		t.Fatalf("pods by shim %v: want one shim of %d pods and one of %d", byShim, group, pods-group)
	}

	start := time.Now()
	if err := syscall.Kill(shim, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for _, name := range members {
		// How fast is a figure (logged below), not an assertion: a loaded
		// machine must not fail the test.
		p := d.waitPod(name, 60*time.Second, "restarted after its shim was killed", func(p *corev1.Pod) bool {
			return allRunning(p) && p.Status.ContainerStatuses[0].RestartCount == 1
		})
		if pid := containerPID(t, p, "main"); pid == oldPID[name] || running(oldPID[name]) {
			t.Fatalf("%s: container PID %d (was %d, still running: %v)", name, pid, oldPID[name], running(oldPID[name]))
		}
	}
	t.Logf("%d pods restarted %v after kill -9 of their shim %d", len(members), time.Since(start).Round(time.Millisecond), shim)
	p := d.waitRunning(other[0])
	if pid, rc := containerPID(t, p, "main"), p.Status.ContainerStatuses[0].RestartCount; pid != oldPID[other[0]] || rc != 0 {
		t.Fatalf("%s in the other shim: PID %d → %d, restarts %d", other[0], oldPID[other[0]], pid, rc)
	}
}

// TestWedgedShimIsKilled: a shim that stops answering (SIGSTOP here; a
// runc create stuck in it in the wild) holds every task create of its
// group. With runtimeRequestTimeout 10s, a second pod joining the group
// times out its create; podhost finds the group's shim from the host
// (runc state, /proc), kills it, and both pods run again in a new shim.
func TestWedgedShimIsKilled(t *testing.T) {
	d := newPodhostd(t)
	appendConfig(t, d, "runtimeRequestTimeout: 10s\n") // shimGroupSize: the default 8, both pods in one group
	d.writeManifest("wa.yaml", idlePod("wa"))
	d.start()
	oldPID := containerPID(t, d.waitRunning("wa"), "main")
	shim := testenv.ParentPID(oldPID)
	if comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", shim)); strings.TrimSpace(string(comm)) != "containerd-shim" {
		t.Fatalf("parent %d of the container is %q, not the shim", shim, comm)
	}
	stopped := stopProcess(t, shim)

	d.writeManifest("wb.yaml", idlePod("wb"))
	start := time.Now()
	if err := waitFor(3*time.Minute, func() (bool, error) { return !running(shim), nil }); err != nil {
		d.captureStuck()
		t.Fatalf("the stopped shim %d of the group is still there: %v\n%s", shim, err, d.logs())
	}
	t.Logf("stopped shim %d killed %v after the second pod was written", shim, time.Since(start).Round(time.Millisecond))
	stopped.Store(false)
	if line := logLine(d.logs(), fmt.Sprintf("shim_pid=%d", shim)); line == "" {
		t.Errorf("no log line names the killed shim %d", shim)
	} else {
		t.Logf("podhost: %s", line)
	}
	a := d.waitPod("wa", 3*time.Minute, "running again after its shim was killed", func(p *corev1.Pod) bool {
		return allRunning(p) && p.Status.ContainerStatuses[0].RestartCount >= 1
	})
	b := d.waitPod("wb", 3*time.Minute, "running after its group's shim was killed", allRunning)
	pa, pb := containerPID(t, a, "main"), containerPID(t, b, "main")
	if pa == oldPID || running(oldPID) {
		t.Fatalf("wa: container PID %d (was %d, still running: %v)", pa, oldPID, running(oldPID))
	}
	if sa, sb := testenv.ParentPID(pa), testenv.ParentPID(pb); sa == shim || sa != sb {
		t.Fatalf("after the kill wa is in shim %d, wb in %d (the killed one was %d): want one new shim", sa, sb, shim)
	}
	d.waitEvent("wa", runtime.ReasonShimKilled, fmt.Sprintf("(PID %d)", shim), time.Minute)

	// The harness's shim dumps (captureStuck) reach a shim whose first
	// task is gone: containerd stopped reading its log pipe with that task.
	d.writeManifest("wc.yaml", idlePod("wc"))
	pc := containerPID(t, d.waitRunning("wc"), "main")
	d.removeManifest("wa.yaml")
	d.removeManifest("wb.yaml")
	d.waitPodGone(t, a)
	d.waitPodGone(t, b)
	pids, dumps, orphans := shimDumps()
	if !slices.Contains(pids, testenv.ParentPID(pc)) || len(dumps) < len(pids) || orphans == 0 {
		t.Fatalf("shims %v (wc's: %d): %d dumps, %d log pipes read by the harness; want a dump each, one pipe at least",
			pids, testenv.ParentPID(pc), len(dumps), orphans)
	}
	t.Logf("shim dumps: %d shims %v, %d dumps, %d read from log pipes containerd no longer reads", len(pids), pids, len(dumps), orphans)
}

// logLine returns the first line of logs that contains s.
func logLine(logs, s string) string {
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, s) {
			return l
		}
	}
	return ""
}

// stopProcess SIGSTOPs pid through a pidfd; the test's cleanup SIGCONTs
// it (through the same pidfd: never another process that got its PID)
// unless the returned flag was cleared.
func stopProcess(t *testing.T, pid int) *atomic.Bool {
	t.Helper()
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		t.Fatal(err)
	}
	stopped := &atomic.Bool{}
	t.Cleanup(func() {
		if stopped.Load() {
			_ = unix.PidfdSendSignal(fd, unix.SIGCONT, nil, 0)
		}
		unix.Close(fd)
	})
	stopped.Store(true)
	if err := unix.PidfdSendSignal(fd, unix.SIGSTOP, nil, 0); err != nil {
		t.Fatal(err)
	}
	return stopped
}
