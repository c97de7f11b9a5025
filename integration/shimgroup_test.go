//go:build integration

package integration

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/config"
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
