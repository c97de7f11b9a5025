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

	"github.com/podhost/podhost/internal/model/wellknown"
)

// stubbornPod ignores SIGTERM and asks for two minutes to stop: only a
// shorter grace period (or SIGKILL after it) ends it sooner.
func stubbornPod(name, app string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
  labels: {app: %s}
spec:
  terminationGracePeriodSeconds: 120
  containers:
  - name: main
    image: %s
    command: ["sh", "-c", "trap '' TERM; while true; do sleep 1; done"]
`, name, app, env.ImageRef)
}

// hostContainers counts containerd's containers of pod namespace/name.
func hostContainers(t *testing.T, namespace, name string) int {
	t.Helper()
	ctx := env.Context(context.Background())
	cs, err := env.Client().Containers(ctx, fmt.Sprintf("labels.%q==%s,labels.%q==%s", wellknown.LabelPodNamespace, namespace, wellknown.LabelPodName, name))
	if err != nil {
		t.Fatal(err)
	}
	return len(cs)
}

// TestKubectlApplyDeleteFlags: apply --dry-run writes nothing; apply -n
// runs the pods in that namespace (checked on the host); delete -l with
// --grace-period=1 ends pods that ignore SIGTERM and ask for 120 s in a few
// seconds, and only the selected ones; delete --all --force returns at
// once, saying "force deleted", and the pod is gone soon after.
func TestKubectlApplyDeleteFlags(t *testing.T) {
	d := newPodhostd(t)
	d.start()
	in := filepath.Join(t.TempDir(), "pods.yaml")
	doc := stubbornPod("g1", "web") + "---\n" + stubbornPod("g2", "web") + "---\n" + stubbornPod("g3", "db")
	if err := os.WriteFile(in, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"client", "server"} {
		out := d.mustCLI("apply", "-f", in, "-n", "infra", "--dry-run="+mode)
		if !strings.Contains(out, "pod/g1 created ("+map[string]string{"client": "dry run", "server": "server dry run"}[mode]+")") {
			t.Fatalf("apply --dry-run=%s: %s", mode, out)
		}
	}
	if entries, _ := os.ReadDir(d.manifestDir); len(entries) != 0 {
		t.Fatalf("a dry run wrote %v", entries)
	}
	if out, err := d.cli("apply", "-f", in, "--dry-run=maybe"); err == nil || !strings.Contains(out, `Invalid dry-run value (maybe). Must be "none", "server", or "client".`) {
		t.Fatalf("--dry-run=maybe: %v %s", err, out)
	}

	d.mustCLI("apply", "-f", in, "-n", "infra", "--wait=90s")
	for _, n := range []string{"g1", "g2", "g3"} {
		if hostContainers(t, "infra", n) == 0 || hostContainers(t, "default", n) != 0 {
			t.Fatalf("pod %s does not run in namespace infra on the host", n)
		}
	}

	start := time.Now()
	out := d.mustCLI("delete", "pods", "-n", "infra", "-l", "app=web", "--grace-period=1")
	if took := time.Since(start); took > 60*time.Second {
		t.Fatalf("delete --grace-period=1 took %v: the pods' own 120 s applied", took)
	}
	if out != "pod \"g1\" deleted\npod \"g2\" deleted\n" {
		t.Fatalf("delete -l: %q", out)
	}
	if hostContainers(t, "infra", "g1")+hostContainers(t, "infra", "g2") != 0 || hostContainers(t, "infra", "g3") == 0 {
		t.Fatal("delete -l app=web: the host does not run exactly g3")
	}

	start = time.Now()
	out, err := d.cli("delete", "--all", "-n", "infra", "--force")
	if err != nil || !strings.Contains(out, `pod "g3" force deleted`) || !strings.Contains(out, "Warning: Immediate deletion does not wait") {
		t.Fatalf("delete --all --force: %v\n%s", err, out)
	}
	if err := waitFor(60*time.Second, func() (bool, error) { return hostContainers(t, "infra", "g3") == 0, nil }); err != nil {
		t.Fatalf("g3 still on the host %v after delete --force (its own grace is 120 s)", time.Since(start))
	}
	if out := d.mustCLI("delete", "--all", "-n", "infra"); out != "No resources found\n" {
		t.Fatalf("delete --all of nothing: %q", out)
	}
}
