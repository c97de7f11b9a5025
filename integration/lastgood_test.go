//go:build integration

package integration

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/model/wellknown"
)

// TestRobustManifestGarbageWhileDown: podhost stopped, a running pod's
// manifest overwritten with garbage, podhost started: the pod keeps running
// at its last good version (persisted in the state db) — same UID, same
// container, same process — and shows the file error. Fixing the file to a
// new valid version replaces the pod as any edit does.
func TestRobustManifestGarbageWhileDown(t *testing.T) {
	d := newPodhostd(t)
	d.start()
	d.writeManifest("app.yaml", sleeper("app", 10, ""))
	old := d.waitRunning("app")
	oldID := containerStatus(old, "main").ContainerID
	pid := containerPID(t, old, "main")

	d.kill(syscall.SIGTERM)
	// Not the atomic rename: a torn, half-written file.
	if err := os.WriteFile(filepath.Join(d.manifestDir, "app.yaml"), []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: app\n\x00\xff"), 0o644); err != nil {
		t.Fatal(err)
	}
	d.start()
	p := d.pod("app")
	if p == nil || p.UID != old.UID {
		t.Fatalf("after restart with a garbage manifest: pod %v, want the last good version %s\n%s", p, old.UID, d.logs())
	}
	if id := containerStatus(p, "main").ContainerID; id != oldID {
		t.Fatalf("container %s, want the same %s", id, oldID)
	}
	if w := p.Annotations[wellknown.AnnotationWarnings]; !strings.Contains(w, "app.yaml: ") {
		t.Fatalf("warnings annotation %q: want the file error", w)
	}
	_, stderr := d.waitCLI(30*time.Second, "the file error", func(_, stderr string) bool {
		return strings.Contains(stderr, "Warning: app.yaml: ")
	}, "get", "pods")
	t.Logf("get pods stderr:\n%s", stderr)
	assertTaskPID(t, p, "main", pid)
	if strings.Contains(d.logs(), "terminating orphaned runtime pod") {
		t.Fatalf("the kept pod was treated as an orphan:\n%s", d.logs())
	}

	d.writeManifest("app.yaml", sleeper("app", 10, "    env: [{name: VERSION, value: \"2\"}]\n"))
	nw := d.waitPod("app", 30*time.Second, "new version running", func(p *corev1.Pod) bool {
		return p.UID != old.UID && allRunning(p) && p.Annotations[wellknown.AnnotationWarnings] == ""
	})
	if err := waitFor(30*time.Second, func() (bool, error) { return len(podContainers(t, string(old.UID))) == 0, nil }); err != nil {
		t.Fatalf("old version's containers never removed: %v\n%s", podContainers(t, string(old.UID)), d.logs())
	}
	if containerStatus(nw, "main").ContainerID == oldID {
		t.Fatal("the new version kept the old container")
	}
}
