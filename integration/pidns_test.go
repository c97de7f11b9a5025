//go:build integration

package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// pidNS is the PID namespace of pid as /proc shows it ("pid:[<inode>]").
func pidNS(t *testing.T, pid int) string {
	t.Helper()
	ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", pid))
	if err != nil {
		t.Fatalf("pid namespace of %d: %v", pid, err)
	}
	return ns
}

// procsInPIDNS returns the host pids of the processes whose PID namespace
// is ns, and which of them is its PID 1 (0: none).
func procsInPIDNS(ns string) (pids []int, init int) {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if got, _ := os.Readlink(filepath.Join("/proc", e.Name(), "ns", "pid")); got != ns {
			continue
		}
		pids = append(pids, pid)
		status, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "status"))
		for _, l := range strings.Split(string(status), "\n") {
			if f := strings.Fields(strings.TrimPrefix(l, "NSpid:")); strings.HasPrefix(l, "NSpid:") && len(f) > 1 && f[len(f)-1] == "1" {
				init = pid
			}
		}
	}
	return pids, init
}

// childrenOf returns the pids whose parent is pid, zombies included.
func childrenOf(pid int) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if f := statFields(child); len(f) > 1 && f[1] == strconv.Itoa(pid) {
			out = append(out, child)
		}
	}
	return out
}

// TestShareProcessNamespace: the containers of a pod with
// shareProcessNamespace: true run in one PID namespace of their own, whose
// PID 1 is podhost's pause process (outside the containers, not root): it
// reaps the orphans the containers leave, the namespace outlives a
// container's restart and podhost's, and deleting the pod leaves no process
// of it and no sandbox dir.
func TestShareProcessNamespace(t *testing.T) {
	d := newPodhostd(t)
	d.start()
	// app leaves an orphan (sleep 3, its subshell gone): the namespace's
	// PID 1 inherits it and must reap it when it exits.
	d.writeManifest("shared.yaml", podManifest("shared", fmt.Sprintf(`  shareProcessNamespace: true
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: %[1]s
    command: ["sh", "-c", "(sleep 3 &); exec sleep 3600"]
  - name: peer
    image: %[1]s
    command: ["sleep", "3601"]
`, env.ImageRef)))
	p := d.waitRunning("shared")
	app, peer := containerPID(t, p, "app"), containerPID(t, p, "peer")
	ns := pidNS(t, app)
	if peerNS := pidNS(t, peer); peerNS != ns {
		t.Fatalf("app in %s, peer in %s: want one PID namespace", ns, peerNS)
	}
	if self := pidNS(t, os.Getpid()); ns == self {
		t.Fatalf("the pod's containers are in the host's PID namespace %s", ns)
	}
	pids, pause := procsInPIDNS(ns)
	if pause == 0 || pause == app || pause == peer {
		t.Fatalf("PID 1 of the pod's namespace = %d (app %d, peer %d, in it: %v): want a process of its own", pause, app, peer, pids)
	}
	if got := procStatusField(pause, "Uid"); got != "65535 65535 65535 65535" {
		t.Errorf("pause %d runs as uid %q, want 65535", pause, got)
	}
	// Each container sees the other's processes: peer's sleep is in
	// app's /proc, and the namespace's PID 1 is pause.
	out, err := d.cli("exec", "shared", "-c", "app", "--", "sh", "-c", "cat /proc/[0-9]*/cmdline | tr '\\0' ' '; echo; cat /proc/1/comm")
	if err != nil || !strings.Contains(out, "sleep 3601") || !strings.HasSuffix(out, "\npodhost-pause\n") {
		t.Errorf("app's /proc does not show peer's sleep 3601 and pause as PID 1 (err %v):\n%s", err, out)
	}
	// The orphan: first a child of pause, then gone for good (reaped, not
	// a zombie).
	if err := waitFor(60*time.Second, func() (bool, error) { return len(childrenOf(pause)) > 0, nil }); err != nil {
		t.Fatalf("app's orphan never became a child of pause %d: %v", pause, err)
	}
	if err := waitFor(60*time.Second, func() (bool, error) { return len(childrenOf(pause)) == 0, nil }); err != nil {
		t.Fatalf("pause %d did not reap its children %v: %v", pause, childrenOf(pause), err)
	}

	// A container restart keeps the namespace and its PID 1.
	killPID(t, peer)
	p = d.waitPod("shared", 60*time.Second, "peer restarted", func(p *corev1.Pod) bool {
		cs := containerStatus(p, "peer")
		return allRunning(p) && cs != nil && cs.RestartCount >= 1
	})
	if got := pidNS(t, containerPID(t, p, "peer")); got != ns {
		t.Errorf("restarted peer in %s, want the pod's %s", got, ns)
	}
	if _, init := procsInPIDNS(ns); init != pause {
		t.Errorf("PID 1 of the namespace is %d after the restart, want pause %d", init, pause)
	}

	// podhost's restart neither: the pod is adopted as it runs.
	d.kill(syscall.SIGKILL)
	if !alive(pause) {
		t.Fatalf("pause %d died with podhost", pause)
	}
	d.start()
	p = d.waitRunning("shared")
	assertTaskPID(t, p, "app", app)
	if _, init := procsInPIDNS(ns); init != pause {
		t.Errorf("PID 1 of the namespace is %d after podhost's restart, want pause %d", init, pause)
	}

	// Deletion leaves no process of the namespace and no sandbox dir.
	d.removeManifest("shared.yaml")
	d.waitPodGone(t, p)
	if err := waitFor(60*time.Second, func() (bool, error) {
		pids, _ := procsInPIDNS(ns)
		return len(pids) == 0, nil
	}); err != nil {
		pids, _ := procsInPIDNS(ns)
		t.Errorf("processes of the deleted pod's namespace still run: %v", pids)
	}
	sandboxes := filepath.Join(env.RunDir, filepath.Base(d.dir), "sandboxes")
	if left := dirNames(sandboxes); len(left) > 0 {
		t.Errorf("sandbox dirs left in %s: %v", sandboxes, left)
	}
}

// procStatusField returns key's value in /proc/<pid>/status, fields joined
// by one space ("" if gone).
func procStatusField(pid int, key string) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, key+":"); ok {
			return strings.Join(strings.Fields(v), " ")
		}
	}
	return ""
}
