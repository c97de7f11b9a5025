//go:build integration

package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/kubelet/manager"
)

// orderedPod is a pod with one container whose TERM handler runs onTerm
// (a shell snippet) before exiting; after is its podhost.io/after.
func orderedPod(name, after, script, onTerm, extra, ctl string) string {
	ann := ""
	if after != "" {
		ann = fmt.Sprintf("  annotations:\n    podhost.io/after: %q\n", after)
	}
	cmd := fmt.Sprintf("trap '%s; exit 0' TERM; %s; while true; do sleep 0.1; done", onTerm, script)
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
%sspec:
  terminationGracePeriodSeconds: 10
  containers:
  - name: main
    image: %s
    command: ["sh", "-c", %q]
    volumeMounts: [{name: ctl, mountPath: /ctl}]
%s%s`, name, ann, env.ImageRef, cmd, extra, ctlVolume(ctl))
}

// containerCreatedAt is containerd's creation time of a container.
func containerCreatedAt(t *testing.T, id string) time.Time {
	t.Helper()
	ctx := env.Context(context.Background())
	c, err := env.Client().LoadContainer(ctx, strings.TrimPrefix(id, "containerd://"))
	if err != nil {
		t.Fatal(err)
	}
	info, err := c.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return info.CreatedAt
}

func podReadySince(p *corev1.Pod) time.Time {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return c.LastTransitionTime.Time
		}
	}
	return time.Time{}
}

// TestOrderAfterReadyAndStopOrder: app (podhost.io/after: db) waits,
// Pending with WaitingForDependencies, until db's readiness probe passes
// (3 s after db starts); its container is created only then. Deleting both
// in one command stops app before db: db's TERM handler sees app's marker.
func TestOrderAfterReadyAndStopOrder(t *testing.T) {
	d := newPodhostd(t)
	d.start()
	ctl := t.TempDir()
	if err := os.Chmod(ctl, 0o777); err != nil {
		t.Fatal(err)
	}
	db := orderedPod("db", "", "sleep 3; touch /tmp/ready",
		"if [ -f /ctl/app-stopped ]; then touch /ctl/db-saw-app-stopped; fi",
		"    readinessProbe:\n      exec: {command: [cat, /tmp/ready]}\n      periodSeconds: 1\n", ctl)
	app := orderedPod("app", "db", "true", "sleep 1; touch /ctl/app-stopped", "", ctl)
	d.writeManifest("stack.yaml", db+"---\n"+app)

	d.waitPod("app", 10*time.Second, "waiting for db", func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodPending && p.Status.Reason == manager.ReasonWaitingForDependencies &&
			strings.Contains(p.Status.Message, "db")
	})
	appPod := d.waitRunning("app")
	dbPod := d.pod("db")
	readyAt := podReadySince(dbPod)
	dbCreated := containerCreatedAt(t, containerStatus(dbPod, "main").ContainerID)
	appCreated := containerCreatedAt(t, containerStatus(appPod, "main").ContainerID)
	t.Logf("db created %s, Ready %s, app created %s", dbCreated.Format(time.RFC3339Nano), readyAt.Format(time.RFC3339), appCreated.Format(time.RFC3339Nano))
	if readyAt.IsZero() || appCreated.Before(readyAt) || appCreated.Sub(dbCreated) < 3*time.Second {
		t.Fatalf("app created at %s: before db was Ready (%s; db created %s)", appCreated, readyAt, dbCreated)
	}

	if out := d.mustCLI("delete", "app", "db"); !strings.Contains(out, `pod "db" deleted`) {
		t.Fatalf("delete: %s", out)
	}
	if err := waitFor(60*time.Second, func() (bool, error) {
		return len(podContainers(t, string(dbPod.UID))) == 0 && len(podContainers(t, string(appPod.UID))) == 0, nil
	}); err != nil {
		t.Fatalf("pods not gone: %v\n%s", err, d.logs())
	}
	if _, err := os.Stat(filepath.Join(ctl, "db-saw-app-stopped")); err != nil {
		t.Fatalf("db was stopped before app finished stopping: %v\n%s", err, d.logs())
	}
}

// TestOrderCycleRefusedAtApply: a cycle across the applied file and the
// manifest dir is one line naming the file, exit 1, and nothing written.
func TestOrderCycleRefusedAtApply(t *testing.T) {
	d := newPodhostd(t)
	d.start()
	ctl := t.TempDir()
	d.writeManifest("db.yaml", orderedPod("db", "app", "true", "true", "", ctl))
	in := filepath.Join(t.TempDir(), "app.yaml")
	if err := os.WriteFile(in, []byte(orderedPod("app", "db", "true", "true", "", ctl)), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := d.cliSplit("apply", "-f", in)
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	want := "app.yaml: pod default/app: podhost.io/after: dependency cycle app -> db -> app"
	if code != 1 || len(lines) != 1 || !strings.Contains(lines[0], want) {
		t.Fatalf("apply: exit %d, stdout %q, stderr %q; want exit 1 and one line %q", code, stdout, stderr, want)
	}
	if _, err := os.Stat(filepath.Join(d.manifestDir, "app.yaml")); err == nil {
		t.Fatal("app.yaml written despite the cycle")
	}
}
