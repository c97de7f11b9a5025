//go:build integration

package integration

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// cli runs the podhost CLI against d (its socket, manifest dir, config).
func (d *podhostd) cli(args ...string) (string, error) {
	all := append([]string{"--config", d.configPath, "--socket", d.socket, "--manifest-dir", d.manifestDir}, args...)
	out, err := exec.Command(env.PodhostBin, all...).CombinedOutput()
	return string(out), err
}

func (d *podhostd) mustCLI(args ...string) string {
	d.t.Helper()
	out, err := d.cli(args...)
	if err != nil {
		d.t.Fatalf("podhost %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// TestCLIWorkflow drives podhost the way an operator does: apply --wait,
// get (table, wide, json, name), describe, logs (tail, follow, previous),
// delete.
func TestCLIWorkflow(t *testing.T) {
	d := newPodhostd(t)
	d.start()
	manifest := filepath.Join(t.TempDir(), "counter.yaml")
	if err := os.WriteFile(manifest, []byte(podManifest("counter", `  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: `+env.ImageRef+`
    command: ["sh", "-c", "echo start; i=0; while [ $i -lt 3 ]; do i=$((i+1)); echo line$i; done; exec sleep 3600"]
`)), 0o644); err != nil {
		t.Fatal(err)
	}
	out := d.mustCLI("apply", "-f", manifest, "--wait=60s")
	if !strings.Contains(out, "pod/counter created") || !strings.Contains(out, "pod/counter condition met") {
		t.Fatalf("apply --wait output:\n%s", out)
	}
	if out := d.mustCLI("apply", "-f", manifest); !strings.Contains(out, "pod/counter unchanged") {
		t.Fatalf("re-apply: %s", out)
	}

	table := d.mustCLI("get", "pods")
	if !strings.Contains(table, "NAME") || !regexpLine(table, `counter\s+1/1\s+Running\s+0\s+`) {
		t.Fatalf("get pods:\n%s", table)
	}
	if wide := d.mustCLI("get", "pods", "-o", "wide"); !strings.Contains(wide, "IP") || !strings.Contains(wide, "10.") {
		t.Fatalf("get pods -o wide:\n%s", wide)
	}
	var list corev1.PodList
	if err := json.Unmarshal([]byte(d.mustCLI("get", "pods", "-o", "json")), &list); err != nil || len(list.Items) != 1 ||
		list.Items[0].Status.Phase != corev1.PodRunning || list.Items[0].Status.PodIP == "" {
		t.Fatalf("get pods -o json: %v %+v", err, list)
	}
	if names := d.mustCLI("get", "pods", "-o", "name"); strings.TrimSpace(names) != "pod/counter" {
		t.Fatalf("-o name: %q", names)
	}
	checkNotFound(t, d)
	desc := d.mustCLI("describe", "pod", "counter")
	for _, want := range []string{"Name:", "counter", "Running", "Conditions:", "Ready", "Events:", "Started"} {
		if !strings.Contains(desc, want) {
			t.Fatalf("describe lacks %q:\n%s", want, desc)
		}
	}
	if err := waitFor(10*time.Second, func() (bool, error) {
		out, err := d.cli("logs", "counter")
		return strings.Contains(out, "line3"), err
	}); err != nil {
		t.Fatalf("logs: %v", err)
	}
	if tail := d.mustCLI("logs", "counter", "--tail", "1"); strings.TrimSpace(tail) != "line3" {
		t.Fatalf("logs --tail 1: %q", tail)
	}
	if ts := d.mustCLI("logs", "counter", "--timestamps", "--tail", "1"); !strings.HasPrefix(ts, "20") || !strings.Contains(ts, " line3") {
		t.Fatalf("logs --timestamps: %q", ts)
	}
	if _, err := d.cli("logs", "counter", "--previous"); err == nil {
		t.Fatal("logs --previous of a never-restarted container succeeded")
	}
	checkFollow(t, d)

	uid := list.Items[0].UID
	if out := d.mustCLI("delete", "counter"); !strings.Contains(out, `pod "counter" deleted`) {
		t.Fatalf("delete: %s", out)
	}
	// As kubectl delete, it returned once the pod is gone: its containers
	// with it, on the host.
	if p := d.pod("counter"); p != nil {
		t.Fatalf("pod still listed after delete returned: %s", statusSummary(p))
	}
	if cs := podContainers(t, string(uid)); len(cs) != 0 {
		t.Fatalf("containers of the deleted pod left in containerd: %v", cs)
	}
	if _, err := d.cli("delete", "counter"); err == nil {
		t.Fatal("second delete succeeded")
	}
}

// checkNotFound: a missing pod is kubectl's NotFound line, exit code 1, for
// get (after what was found), logs and exec: the daemon's 404 words it as
// kubectl, which the CLI relies on.
func checkNotFound(t *testing.T, d *podhostd) {
	t.Helper()
	const notFound = "Error from server (NotFound): pods \"nope\" not found\n"
	for _, tc := range []struct {
		args  []string
		found bool // the table of counter comes first
	}{
		{[]string{"get", "pods", "counter", "nope"}, true},
		{[]string{"get", "pod/nope"}, false},
		{[]string{"logs", "pod/nope"}, false},
		{[]string{"exec", "nope", "--", "true"}, false},
	} {
		out, err := d.cli(tc.args...)
		if err == nil || !strings.HasSuffix(out, notFound) || strings.Contains(out, "Error: ") || regexpLine(out, `counter\s+1/1\s+Running`) != tc.found {
			t.Fatalf("podhost %s: %v\n%s", strings.Join(tc.args, " "), err, out)
		}
	}
}

// checkFollow: logs -f streams lines as they are written.
func checkFollow(t *testing.T, d *podhostd) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, env.PodhostBin, "--config", d.configPath, "--socket", d.socket, "logs", "-f", "counter")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); _ = cmd.Wait() }()
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if sc.Text() == "line3" {
			return
		}
	}
	t.Fatalf("logs -f ended without line3: %v", sc.Err())
}

func regexpLine(s, pattern string) bool {
	return regexpMust(pattern).MatchString(s)
}

func regexpMust(p string) *regexp.Regexp { return regexp.MustCompile(p) }
