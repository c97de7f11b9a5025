//go:build integration

package integration

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/model/wellknown"
)

// rolloutPod is pod web with one container running script (or image given);
// annotations are extra lines under metadata.annotations.
func rolloutPod(image, script, annotations string) string {
	ann := ""
	if annotations != "" {
		ann = "  annotations:\n" + annotations
	}
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: web
%sspec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: %s
    command: ["sh", "-c", %q]
`, ann, image, script)
}

func podIsReady(p *corev1.Pod) bool {
	return allRunning(p) && !podReadySince(p).IsZero()
}

// waitVersion waits until pod web runs uid, all containers running and Ready.
func (d *podhostd) waitVersion(uid types.UID, timeout time.Duration, what string) *corev1.Pod {
	d.t.Helper()
	return d.waitPod("web", timeout, what, func(p *corev1.Pod) bool { return p.UID == uid && podIsReady(p) })
}

// editAndExpectRollback writes bad as web.yaml over the Ready version good
// and checks that within window + 5 s the good version runs again (same
// UID, new containers in containerd) and the bad one has none left.
func (d *podhostd) editAndExpectRollback(good *corev1.Pod, bad string, window time.Duration, wantReason string) *corev1.Pod {
	d.t.Helper()
	edited := time.Now()
	d.writeManifest("web.yaml", bad)
	newUID := d.waitPod("web", 10*time.Second, "the edit picked up", func(p *corev1.Pod) bool { return p.UID != good.UID }).UID
	back := d.waitVersion(good.UID, window+5*time.Second, "rolled back to the previous version")
	d.t.Logf("rolled back %s after the edit", time.Since(edited).Round(time.Millisecond))
	if got := back.Annotations[wellknown.AnnotationRolledBackReason]; !strings.Contains(got, wantReason) {
		d.t.Fatalf("rolled-back reason %q, want %q", got, wantReason)
	}
	if cs := podContainers(d.t.(*testing.T), string(good.UID)); len(cs) == 0 {
		d.t.Fatal("previous version reported running but has no containers in containerd")
	}
	if err := waitFor(10*time.Second, func() (bool, error) {
		return len(podContainers(d.t.(*testing.T), string(newUID))) == 0, nil
	}); err != nil {
		d.t.Fatalf("the failed version's containers are still there: %v\n%s", err, d.logs())
	}
	if a, b := containerStatus(good, "main"), containerStatus(back, "main"); a.ContainerID == b.ContainerID || b.RestartCount != 0 {
		d.t.Fatalf("previous version came back with container %s (restarts %d), want a new start (not %s, 0 restarts)",
			b.ContainerID, b.RestartCount, a.ContainerID)
	}
	return back
}

// checkRolledBackShown: get -o wide, describe, events and rollout history
// show the rollback of revision 2 to revision 1.
func (d *podhostd) checkRolledBackShown(back *corev1.Pod, wantReason string) {
	d.t.Helper()
	from := back.Annotations[wellknown.AnnotationRolledBackFrom]
	if wide := d.mustCLI("get", "pods", "-o", "wide"); !strings.Contains(wide, "(rolled back from "+from+")") {
		d.t.Fatalf("get -o wide does not show the rollback from %s:\n%s", from, wide)
	}
	desc := d.mustCLI("describe", "pod", "web")
	for _, want := range []string{"Rolled Back:", "from " + from + ": " + wantReason, "RolledBack", "brought back in place of revision 2"} {
		if !strings.Contains(desc, want) {
			d.t.Fatalf("describe lacks %q:\n%s", want, desc)
		}
	}
	hist := d.mustCLI("rollout", "history", "web")
	lines := strings.Split(strings.TrimSpace(hist), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[2], "1* ") || !strings.Contains(lines[2], "Ready") ||
		!strings.HasPrefix(lines[3], "2 ") || !strings.Contains(lines[3], "RolledBack") || !strings.Contains(lines[3], wantReason) {
		d.t.Fatalf("rollout history:\n%s", hist)
	}
}

// TestRollbackImageNotFound: an edit to an image that does not exist
// (podhost.io/rollback-after: 5s) is rolled back within the window + 5 s to
// the running previous version, shown by get/describe/history; a further
// edit of the file is tried and kept once Ready.
func TestRollbackImageNotFound(t *testing.T) {
	d := newPodhostd(t)
	d.start()
	const window = 5 * time.Second
	ann := "    podhost.io/rollback-after: 5s\n"
	d.writeManifest("web.yaml", rolloutPod(env.ImageRef, "sleep 3600", ann))
	good := d.waitPod("web", 60*time.Second, "Ready", podIsReady)

	// A registry port nothing listens on: the pull fails at once.
	back := d.editAndExpectRollback(good, rolloutPod("127.0.0.1:1/no-such-image:1", "sleep 3600", ann), window, "ImagePull")
	reason := strings.SplitN(back.Annotations[wellknown.AnnotationRolledBackReason], ":", 2)[0]
	if reason != "ErrImagePull" && reason != "ImagePullBackOff" {
		t.Fatalf("rolled-back reason %q, want ErrImagePull or ImagePullBackOff", reason)
	}
	d.checkRolledBackShown(back, reason)

	d.writeManifest("web.yaml", rolloutPod(env.ImageRef, "sleep 3601", ann))
	v3 := d.waitPod("web", 60*time.Second, "the further edit runs", func(p *corev1.Pod) bool {
		return p.UID != good.UID && podIsReady(p)
	})
	if v3.Annotations[wellknown.AnnotationRolledBackFrom] != "" {
		t.Fatalf("the further edit is marked rolled back: %v", v3.Annotations)
	}
	if out := d.mustCLI("rollout", "history", "web"); !strings.Contains(out, "3* ") {
		t.Fatalf("rollout history after the further edit:\n%s", out)
	}
}

// TestRollbackCrashLoopSurvivesRestart: with the daemon's rollbackAfter
// (5 s), an edit to a command that exits 1 is rolled back within the window
// + 5 s; after a podhost restart the previous version still runs (same
// containers) and the failed one is not tried again; rollout undo of a
// later good edit brings revision 1 back.
func TestRollbackCrashLoopSurvivesRestart(t *testing.T) {
	d := newPodhostd(t)
	cfg, err := os.ReadFile(d.configPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(d.configPath, append(cfg, "rollbackAfter: 5s\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	d.start()
	d.writeManifest("web.yaml", rolloutPod(env.ImageRef, "sleep 3600", ""))
	good := d.waitPod("web", 60*time.Second, "Ready", podIsReady)

	back := d.editAndExpectRollback(good, rolloutPod(env.ImageRef, "exit 1", ""), 5*time.Second, "")
	reason := back.Annotations[wellknown.AnnotationRolledBackReason]
	if !strings.HasPrefix(reason, "CrashLoopBackOff") && !strings.HasPrefix(reason, "Error") {
		t.Fatalf("rolled-back reason %q, want CrashLoopBackOff or Error", reason)
	}
	d.checkRolledBackShown(back, strings.SplitN(reason, ":", 2)[0])

	d.kill(syscall.SIGTERM)
	d.start()
	after := d.waitVersion(good.UID, 30*time.Second, "the previous version still runs after a restart")
	if a, b := containerStatus(back, "main").ContainerID, containerStatus(after, "main").ContainerID; a != b {
		t.Fatalf("restart replaced the restored container %s by %s", a, b)
	}
	if !strings.Contains(d.mustCLI("get", "pods", "-o", "wide"), "rolled back from") {
		t.Fatal("rolled-back mark lost across the restart")
	}

	d.writeManifest("web.yaml", rolloutPod(env.ImageRef, "sleep 3602", ""))
	v3 := d.waitPod("web", 60*time.Second, "a good edit runs", func(p *corev1.Pod) bool { return p.UID != good.UID && podIsReady(p) })
	if out := d.mustCLI("rollout", "undo", "web"); !strings.Contains(out, "rolled back to revision 1") {
		t.Fatalf("rollout undo: %s", out)
	}
	d.waitVersion(good.UID, 30*time.Second, "revision 1 back after undo")
	if cs := podContainers(t, string(v3.UID)); len(cs) != 0 {
		if err := waitFor(10*time.Second, func() (bool, error) { return len(podContainers(t, string(v3.UID))) == 0, nil }); err != nil {
			t.Fatalf("undone version still has containers: %v", cs)
		}
	}
}
