//go:build integration

package integration

// Failures are visible where the user looks: in the CLI's own output, not
// only in the daemon log or events. Every check reads `podhost` output
// (stdout and stderr apart), as a user would.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/testenv/failpoint"
)

// cliSplit runs the podhost CLI against d and returns stdout, stderr and
// the exit code apart.
func (d *podhostd) cliSplit(args ...string) (stdout, stderr string, code int) {
	d.t.Helper()
	all := append([]string{"--config", d.configPath, "--socket", d.socket, "--manifest-dir", d.manifestDir}, args...)
	var out, errOut bytes.Buffer
	cmd := exec.Command(env.PodhostBin, all...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		d.t.Fatalf("podhost %s: %v", strings.Join(args, " "), err)
	}
	return out.String(), errOut.String(), code
}

// waitCLI runs the CLI until cond holds for its output.
func (d *podhostd) waitCLI(timeout time.Duration, what string, cond func(stdout, stderr string) bool, args ...string) (string, string) {
	d.t.Helper()
	var stdout, stderr string
	err := waitFor(timeout, func() (bool, error) {
		stdout, stderr, _ = d.cliSplit(args...)
		return cond(stdout, stderr), nil
	})
	if err != nil {
		d.t.Fatalf("podhost %s: %s not seen in %v\nstdout:\n%s\nstderr:\n%s\n%s", strings.Join(args, " "), what, timeout, stdout, stderr, d.logs())
	}
	return stdout, stderr
}

// TestVisibleRefusedManifestFiles: a FIFO and a world-writable manifest in
// the manifest dir are named by `get pods` on stderr (the table stays on
// stdout) and listed by `check`.
func TestVisibleRefusedManifestFiles(t *testing.T) {
	d := newPodhostd(t)
	d.start()
	d.writeManifest("web.yaml", sleeper("web", 1, ""))
	d.waitRunning("web")
	if err := syscall.Mkfifo(filepath.Join(d.manifestDir, "fifo.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	open := filepath.Join(d.manifestDir, "open.yaml")
	if err := os.WriteFile(open, []byte(sleeper("open", 1, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o666); err != nil {
		t.Fatal(err)
	}
	stdout, stderr := d.waitCLI(30*time.Second, "warnings for both files", func(_, stderr string) bool {
		return strings.Contains(stderr, "Warning: fifo.yaml: ") && strings.Contains(stderr, "Warning: open.yaml: ")
	}, "get", "pods")
	if !strings.HasPrefix(stdout, "NAME") || !strings.Contains(stdout, "web") || strings.Contains(stdout, "Warning") {
		t.Fatalf("get pods stdout:\n%s", stdout)
	}
	for _, line := range strings.Split(strings.TrimSpace(stderr), "\n") {
		if !strings.HasPrefix(line, "Warning: fifo.yaml: ") && !strings.HasPrefix(line, "Warning: open.yaml: ") {
			t.Errorf("unexpected stderr line %q", line)
		}
	}
	t.Logf("get pods stderr:\n%s", stderr)

	// check: the daemon's view, one line per refused file.
	out, _, _ := d.cliSplit("check", "--containerd-address", env.Address)
	for _, want := range []string{"ok    daemon        running at " + d.socket + ", 2 manifest files refused",
		"warn  manifest-file fifo.yaml: ", "warn  manifest-file open.yaml: "} {
		if !strings.Contains(out, want) {
			t.Errorf("check output lacks %q:\n%s", want, out)
		}
	}
}

// TestVisibleMaxPods: maxPods 3 in the config file and 5 pods: 2 are
// rejected with OutOfpods.
func TestVisibleMaxPods(t *testing.T) {
	d := newPodhostd(t)
	f, err := os.OpenFile(d.configPath, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.WriteString("maxPods: 3\n")
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	d.start()
	for i := range 5 {
		d.writeManifest(fmt.Sprintf("p%d.yaml", i), sleeper(fmt.Sprintf("p%d", i), 1, ""))
	}
	var reasons map[string]int
	d.waitCLI(60*time.Second, "3 running, 2 OutOfpods", func(stdout, _ string) bool {
		var l corev1.PodList
		if json.Unmarshal([]byte(stdout), &l) != nil {
			return false
		}
		reasons = map[string]int{}
		for i := range l.Items {
			p := &l.Items[i]
			switch {
			case allRunning(p):
				reasons["Running"]++
			case p.Status.Phase == corev1.PodFailed:
				reasons[p.Status.Reason]++
			}
		}
		return reasons["Running"] == 3 && reasons["OutOfpods"] == 2
	}, "get", "pods", "-o", "json")
	stdout, _, _ := d.cliSplit("get", "pods")
	if n := strings.Count(stdout, "OutOfpods"); n != 2 {
		t.Fatalf("get pods shows %d OutOfpods, want 2:\n%s", n, stdout)
	}
}

// TestVisibleContainerdOutage: while the private containerd is stopped,
// `get pods` warns on stderr, /readyz fails and describe shows when the
// status was last confirmed; all of it clears once containerd is back.
func TestVisibleContainerdOutage(t *testing.T) {
	d := newPodhostd(t)
	d.start()
	d.writeManifest("web.yaml", sleeper("web", 1, ""))
	d.waitRunning("web")
	if err := env.StopContainerd(); err != nil {
		t.Fatal(err)
	}
	restarted := false
	restart := func() {
		if !restarted {
			restarted = true
			if err := env.StartContainerd(testCtx(t, 60*time.Second)); err != nil {
				t.Fatalf("start containerd: %v", err)
			}
		}
	}
	t.Cleanup(restart) // the rest of the suite needs it, whatever happens here
	want := "Warning: containerd at " + env.Address + " is unreachable since "
	stdout, stderr := d.waitCLI(30*time.Second, "the outage warning", func(_, stderr string) bool {
		return strings.Contains(stderr, want) && strings.Contains(stderr, "; statuses may be stale")
	}, "get", "pods")
	if !strings.Contains(stdout, "web") || strings.Contains(stdout, "Warning") {
		t.Fatalf("get pods stdout:\n%s", stdout)
	}
	t.Logf("get pods stderr during the outage: %s", stderr)
	if code, body := readyz(t, d); code != http.StatusServiceUnavailable || !strings.Contains(body, "containerd at "+env.Address+" is unreachable") {
		t.Fatalf("/readyz during the outage: %d %q", code, body)
	}
	desc, descErr, _ := d.cliSplit("describe", "pod", "web")
	if !strings.Contains(desc, "Last confirmed:") || !strings.Contains(descErr, want) {
		t.Fatalf("describe during the outage:\n%s\nstderr: %s", desc, descErr)
	}

	restart()
	d.waitCLI(30*time.Second, "no warning", func(stdout, stderr string) bool {
		return stderr == "" && strings.Contains(stdout, "web")
	}, "get", "pods")
	if code, body := readyz(t, d); code != http.StatusOK {
		t.Fatalf("/readyz after containerd is back: %d %q", code, body)
	}
	d.waitRunning("web")
}

// readyz asks the daemon's /readyz directly.
func readyz(t *testing.T, d *podhostd) (int, string) {
	t.Helper()
	hc := http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", d.socket)
	}}, Timeout: 10 * time.Second}
	resp, err := hc.Get("http://podhost/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return resp.StatusCode, b.String()
}

// TestVisibleInvalidNamespace: `exec -n ..` is one error line and exit 1,
// not an HTTP redirect; the API answers 400 with the same message.
func TestVisibleInvalidNamespace(t *testing.T) {
	d := newPodhostd(t)
	d.start()
	stdout, stderr, code := d.cliSplit("exec", "-n", "..", "x", "--", "true")
	if code != 1 || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, `Error: invalid namespace "..": a lowercase RFC 1123 label`) {
		t.Fatalf("exec -n ..: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	msg := strings.TrimPrefix(strings.TrimSpace(stderr), "Error: ")
	hc := http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", d.socket)
	}}, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, path := range []string{"/v1/pods/../x/exec?command=true", "/v1/pods/../x"} {
		method := http.MethodGet
		if strings.HasSuffix(path, "command=true") {
			method = http.MethodPost
		}
		req, _ := http.NewRequest(method, "http://podhost"+path, nil)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || strings.TrimSpace(b.String()) != msg {
			t.Errorf("%s %s: %s %q, want 400 %q", method, path, resp.Status, b.String(), msg)
		}
	}
}

// TestVisibleSandboxFailure: a CNI ADD that keeps failing shows as
// CreatePodSandboxError with the plugin's error in the pod's container
// statuses (`get pods -o json`), and clears once the network works.
func TestVisibleSandboxFailure(t *testing.T) {
	d := newPodhostd(t)
	fp := newFailpointNet(t)
	d.startWithNet(fp, true)
	fp.set(t, failpoint.Script{failpoint.CmdAdd: {Fail: 1000, Message: "injected: no more addresses"}})
	d.writeManifest("web.yaml", sleeper("web", 1, ""))
	var cs corev1.ContainerStatus
	d.waitCLI(60*time.Second, "CreatePodSandboxError in the container status", func(stdout, _ string) bool {
		var p corev1.Pod
		if json.Unmarshal([]byte(stdout), &p) != nil || len(p.Status.ContainerStatuses) != 1 {
			return false
		}
		cs = p.Status.ContainerStatuses[0]
		w := cs.State.Waiting
		return w != nil && w.Reason == "CreatePodSandboxError" && strings.Contains(w.Message, "injected: no more addresses")
	}, "get", "pods", "web", "-o", "json")
	t.Logf("waiting: %s: %s", cs.State.Waiting.Reason, cs.State.Waiting.Message)
	table, _, _ := d.cliSplit("get", "pods")
	if !strings.Contains(table, "CreatePodSandboxError") {
		t.Fatalf("get pods:\n%s", table)
	}
	fp.set(t, failpoint.Script{})
	d.waitRunning("web")
}
