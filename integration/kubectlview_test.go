//go:build integration

package integration

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// runningIDs are the containerd IDs of pod default/name's running tasks.
func runningIDs(t *testing.T, name string) []string {
	t.Helper()
	return slices.Sorted(maps.Keys(namedTasks(t, name)))
}

// TestKubectlViewAnswers: what issue 35's row 10 found misleading.
// AGE is known right after apply and --sort-by=.metadata.creationTimestamp
// sorts; apply says "configured" for a label edit (the container keeps
// running, checked on the host) and "replaced" for an edit that recreates
// the pod (a new container runs the new spec); top of a pod that does not
// exist is kubectl's NotFound; check prints one line per refused file; get
// warns only about the files of the pods it lists.
func TestKubectlViewAnswers(t *testing.T) {
	d := newPodhostd(t)
	d.start()
	in := filepath.Join(t.TempDir(), "view.yaml")
	write := func(content string) {
		t.Helper()
		if err := os.WriteFile(in, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(markedPod("view", "one"))
	d.mustCLI("apply", "-f", in)
	// The first listing that shows the pod (it may still be Pending) has
	// an AGE.
	first, _ := d.waitCLI(60*time.Second, "pod view listed", func(stdout, _ string) bool { return strings.Contains(stdout, "view") }, "get", "pods", "--no-headers")
	if strings.Contains(first, "<unknown>") {
		t.Fatalf("AGE right after apply: %q", first)
	}
	d.writeManifest("later.yaml", markedPod("later", "l"))
	waitMark(t, d, "later", "l")
	stamps := d.mustCLI("get", "pods", "--sort-by=.metadata.creationTimestamp", "-o", `jsonpath={range .items[*]}{.metadata.creationTimestamp} {.metadata.name}{"\n"}{end}`)
	sorted := strings.Split(strings.TrimSpace(stamps), "\n")
	if len(sorted) != 2 || strings.HasPrefix(sorted[0], " ") || strings.HasPrefix(sorted[1], " ") ||
		strings.Fields(sorted[0])[0] > strings.Fields(sorted[1])[0] {
		t.Fatalf("--sort-by=.metadata.creationTimestamp: %q, want both pods with a creationTimestamp, in its order", stamps)
	}

	waitMark(t, d, "view", "one")
	before := runningIDs(t, "view")
	write(strings.Replace(markedPod("view", "one"), "metadata:\n", "metadata:\n  labels: {tier: front}\n", 1))
	if out := d.mustCLI("apply", "-f", in); out != "pod/view configured\n" {
		t.Fatalf("label edit: %q", out)
	}
	d.waitPod("view", 60*time.Second, "the label", func(p *corev1.Pod) bool { return p.Labels["tier"] == "front" })
	if after := runningIDs(t, "view"); !slices.Equal(after, before) {
		t.Fatalf("a label edit restarted the container: %v → %v", before, after)
	}
	write(markedPod("view", "two"))
	if out := d.mustCLI("apply", "-f", in); out != "pod/view replaced\n" {
		t.Fatalf("spec edit: %q", out)
	}
	waitMark(t, d, "view", "two")
	if after := runningIDs(t, "view"); len(after) != 1 || slices.Equal(after, before) {
		t.Fatalf("a spec edit: containers %v → %v, want a new one", before, after)
	}

	const notFound = `Error from server (NotFound): podmetrics.metrics.k8s.io "default/nope" not found`
	if _, stderr, code := d.cliSplit("top", "pod", "nope"); code != 1 || strings.TrimSpace(stderr) != "Error: "+notFound && strings.TrimSpace(stderr) != notFound {
		t.Fatalf("top pod nope: exit %d, %q", code, stderr)
	}

	// A file of namespace infra that turns invalid keeps its pod: get of
	// the default namespace does not warn about it, get -n infra does;
	// check lists it once, on one line, with both problems.
	d.writeManifest("infra.yaml", strings.Replace(markedPod("side", "s"), "metadata:\n", "metadata:\n  namespace: infra\n", 1))
	d.waitCLI(60*time.Second, "infra/side", func(stdout, _ string) bool { return strings.Contains(stdout, "side") }, "get", "pods", "-n", "infra")
	broken := strings.Replace(markedPod("side", "s"), "metadata:\n", "metadata:\n  namespace: infra\n", 1)
	broken = strings.Replace(broken, "terminationGracePeriodSeconds: 1", "terminationGracePeriodSeconds: 1\n  restartPolicy: Sometimes\n  activeDeadlineSeconds: 0", 1)
	d.writeManifest("infra.yaml", broken)
	_, stderr := d.waitCLI(60*time.Second, "the warning", func(_, stderr string) bool { return strings.Contains(stderr, "Warning: infra.yaml: ") }, "get", "pods", "-n", "infra")
	if n := strings.Count(stderr, "Warning: infra.yaml: "); n < 2 {
		t.Fatalf("want two problems of infra.yaml in get -n infra's warnings:\n%s", stderr)
	}
	if _, stderr, _ := d.cliSplit("get", "pods"); strings.Contains(stderr, "infra.yaml") {
		t.Fatalf("get pods (namespace default) warns about infra.yaml:\n%s", stderr)
	}
	out, _, _ := d.cliSplit("check", "--containerd-address", env.Address)
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "manifest-file") {
			lines = append(lines, l)
		}
	}
	if len(lines) != 1 || !strings.Contains(lines[0], "infra.yaml: ") || !strings.Contains(lines[0], "; ") {
		t.Fatalf("check: want one line for infra.yaml with both problems, got %q\n%s", lines, out)
	}
}

// TestRolloutAfterExportRoundTrip: the README's get -o yaml | edit | apply.
// Without an edit it is unchanged (no new revision); an edit is a new
// revision that keeps the previous one (the exported uid does not pin the
// new version to the old), so rollout undo brings the previous spec back
// on the host.
func TestRolloutAfterExportRoundTrip(t *testing.T) {
	d := newPodhostd(t)
	d.start()
	d.writeManifest("rt.yaml", markedPod("rt", "one"))
	waitMark(t, d, "rt", "one")
	d.waitPod("rt", 60*time.Second, "ready", podIsReady)
	exported := filepath.Join(t.TempDir(), "rt.yaml")
	yamlOut := d.mustCLI("get", "pod", "rt", "-o", "yaml")
	if !strings.Contains(yamlOut, "uid: ") {
		t.Fatalf("get -o yaml has no uid:\n%s", yamlOut)
	}
	for _, step := range []struct{ from, to, want string }{
		{"", "", "pod/rt unchanged\n"},
		{"value: one", "value: two", "pod/rt replaced\n"},
	} {
		edited := yamlOut
		if step.from != "" {
			edited = strings.Replace(yamlOut, step.from, step.to, 1)
		}
		if err := os.WriteFile(exported, []byte(edited), 0o644); err != nil {
			t.Fatal(err)
		}
		if out := d.mustCLI("apply", "-f", exported); out != step.want {
			t.Fatalf("apply of get -o yaml (%q → %q): %q, want %q", step.from, step.to, out, step.want)
		}
	}
	waitMark(t, d, "rt", "two")
	d.waitPod("rt", 60*time.Second, "ready", podIsReady)
	hist := d.mustCLI("rollout", "history", "rt")
	if lines := strings.Split(strings.TrimSpace(hist), "\n"); len(lines) != 4 || !strings.HasPrefix(lines[2], "1 ") || !strings.HasPrefix(lines[3], "2* ") {
		t.Fatalf("rollout history after the round trip:\n%s", hist)
	}
	if out := d.mustCLI("rollout", "undo", "rt"); !strings.Contains(out, "rolled back to revision 1") {
		t.Fatalf("rollout undo: %s", out)
	}
	waitMark(t, d, "rt", "one")
}
