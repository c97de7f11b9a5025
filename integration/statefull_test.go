//go:build integration

package integration

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/host/state"
)

// TestStateDirFull: the state dir is a small tmpfs that fills up to 100 %.
// podhost keeps running and keeps the running pod; a new pod waits and says
// why; `get` warns, /readyz fails, `check` says so; once space is freed,
// everything converges within 30 s; state.db still opens.
func TestStateDirFull(t *testing.T) {
	var mounted string
	t.Cleanup(func() { // after the podhost teardown below (cleanups run last-in first-out)
		if mounted != "" {
			if err := syscall.Unmount(mounted, syscall.MNT_DETACH); err != nil {
				t.Errorf("unmount %s: %v", mounted, err)
			}
		}
	})
	d := newPodhostd(t)
	if err := os.MkdirAll(d.stateDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", d.stateDir, "tmpfs", 0, "size=8m,mode=0755"); err != nil {
		t.Skipf("cannot mount a tmpfs for the state dir: %v", err)
	}
	mounted = d.stateDir
	d.start()
	d.writeManifest("keep.yaml", sleeper("keep", 1, ""))
	keep := d.waitRunning("keep")

	filler := filepath.Join(d.stateDir, "filler")
	fill(t, filler)
	d.writeManifest("late.yaml", sleeper("late", 1, ""))
	late := d.waitPod("late", 30*time.Second, "waiting with the disk error", func(p *corev1.Pod) bool {
		cs := containerStatus(p, "main")
		return cs != nil && cs.State.Waiting != nil && strings.Contains(cs.State.Waiting.Message, "no space left on device")
	})
	t.Logf("late waits: %s", containerStatus(late, "main").State.Waiting.Message)
	if err := waitFor(10*time.Second, func() (bool, error) {
		_, stderr, _ := d.cliSplit("get", "pods")
		return strings.Contains(stderr, "cannot be written"), nil
	}); err != nil {
		t.Fatalf("get pods does not warn about the full state dir: %v", err)
	}
	if out, _ := d.cli("check"); !strings.Contains(out, "is full") {
		t.Fatalf("check does not report the full state dir:\n%s", out)
	}
	if code, body := readyz(t, d); code != http.StatusServiceUnavailable || !strings.Contains(body, "is full") {
		t.Fatalf("/readyz while the state dir is full: %d %q", code, body)
	}
	if p := d.pod("keep"); p.Status.ContainerStatuses[0].ContainerID != keep.Status.ContainerStatuses[0].ContainerID ||
		p.Status.ContainerStatuses[0].State.Running == nil {
		t.Fatalf("running pod touched while the state dir was full: %s", statusSummary(p))
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	freed := time.Now()
	d.waitPod("late", 30*time.Second, "Running after space was freed", allRunning)
	if err := waitFor(30*time.Second, func() (bool, error) {
		t.Logf("late: %s", containerStatus(late, "main").State.Waiting.Message)
		_, stderr, _ := d.cliSplit("get", "pods")
		return !strings.Contains(stderr, "cannot be written"), nil
	}); err != nil {
		t.Fatalf("state db warning still shown 30 s after space was freed: %v", err)
	}
	t.Logf("converged %v after space was freed", time.Since(freed))
	d.kill(syscall.SIGTERM)
	db, err := state.Open(filepath.Join(d.stateDir, "state.db"))
	if err != nil {
		t.Fatalf("state.db after the full disk: %v", err)
	}
	if err := db.View(func(*state.Tx) error { return nil }); err != nil {
		t.Fatal(err)
	}
	db.Close()
	d.start() // the test's cleanup tears the pods down through it
}

// fill writes to path until the filesystem is full.
func fill(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			return
		}
	}
}
