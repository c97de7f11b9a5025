//go:build integration

package integration

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/podhost/podhost/internal/testenv"
)

// appManifest is a multi-document file as users apply it: a ConfigMap, a
// Secret and a pod reading both; the pod writes "got TERM" to a hostPath
// file when it is stopped, so the host sees its SIGTERM.
func appManifest(marker string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata: {name: app-config}
data: {greeting: hello}
---
apiVersion: v1
kind: Secret
metadata: {name: app-secret}
stringData: {password: s3cret}
---
apiVersion: v1
kind: Pod
metadata: {name: app, labels: {app: app}}
spec:
  terminationGracePeriodSeconds: 30
  volumes:
  - {name: marker, hostPath: {path: %s, type: DirectoryOrCreate}}
  containers:
  - name: main
    image: %s
    command: ["sh", "-c", "trap 'echo got TERM > /marker/term; exit 0' TERM; echo $GREETING $PASSWORD; while true; do sleep 0.2; done"]
    volumeMounts: [{name: marker, mountPath: /marker}]
    env:
    - {name: GREETING, valueFrom: {configMapKeyRef: {name: app-config, key: greeting}}}
    - {name: PASSWORD, valueFrom: {secretKeyRef: {name: app-secret, key: password}}}
`, marker, env.ImageRef)
}

// TestKubectlWrites: apply of a multi-document file writes readable files
// into the manifest dir and runs the pod; a second apply is unchanged; an
// edit (KUBE_EDITOR), label, patch and server-side apply land in the file
// without restarting the pod; create configmap --from-literal; delete
// --grace-period=1 sends SIGTERM (seen on the host) and the pod is gone
// within the grace.
func TestKubectlWrites(t *testing.T) {
	d := newPodhostd(t)
	d.enableKubeAPI()
	d.start()
	d.useKubectl()
	marker := filepath.Join(d.dir, "marker")
	file := filepath.Join(d.dir, "app.yaml")
	if err := os.WriteFile(file, []byte(appManifest(marker)), 0o600); err != nil {
		t.Fatal(err)
	}
	out := d.mustKubectl("apply", "-f", file)
	for _, want := range []string{"configmap/app-config created", "secret/app-secret created", "pod/app created"} {
		if !strings.Contains(out, want) {
			t.Fatalf("apply: %q lacks %q", out, want)
		}
	}
	for _, f := range []string{"app.yaml", "app-config.configmap.yaml", "app-secret.secret.yaml"} {
		b, err := os.ReadFile(filepath.Join(d.manifestDir, f))
		if err != nil || !strings.Contains(string(b), "name: app") {
			t.Fatalf("manifest dir file %s: %v\n%s", f, err, b)
		}
	}
	if fi, err := os.Stat(filepath.Join(d.manifestDir, "app-secret.secret.yaml")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the Secret's file: %v %v, want 0600", fi.Mode(), err)
	}
	d.mustKubectl("wait", "--for=condition=Ready", "pod/app", "--timeout=120s")
	if got := d.mustKubectl("logs", "app"); strings.TrimSpace(got) != "hello s3cret" {
		t.Fatalf("the pod's env from the ConfigMap and the Secret: %q", got)
	}
	uid := d.mustKubectl("get", "pod", "app", "-o", "jsonpath={.metadata.uid}")
	if out := d.mustKubectl("apply", "-f", file); !strings.Contains(out, "pod/app unchanged") || !strings.Contains(out, "configmap/app-config unchanged") {
		t.Fatalf("second apply: %q", out)
	}

	// In-place edits: the pod keeps its UID and container.
	d.mustKubectl("label", "pod", "app", "tier=backend")
	d.mustKubectl("annotate", "pod", "app", "note=kept")
	d.mustKubectl("patch", "configmap", "app-config", "--type=merge", "-p", `{"data":{"extra":"1"}}`)
	editor := filepath.Join(d.dir, "editor.sh")
	if err := os.WriteFile(editor, []byte("#!/bin/sh\nsed -i 's/greeting: hello/greeting: edited/' \"$1\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(kubectlBin(t), "edit", "configmap", "app-config")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+d.kubeconfig, "HOME="+d.dir, "KUBE_EDITOR="+editor)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kubectl edit: %v\n%s", err, b)
	}
	ssa := filepath.Join(d.dir, "ssa.yaml")
	if err := os.WriteFile(ssa, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ssa}\ndata: {a: \"1\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	d.mustKubectl("apply", "--server-side", "-f", ssa)
	_, errOut, code := d.kubectl("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ssa}\ndata: {a: \"2\"}\n",
		"apply", "--server-side", "--field-manager=other", "-f", "-")
	if code == 0 || !strings.Contains(errOut, `conflict with "kubectl"`) {
		t.Fatalf("a second manager's apply: exit %d %s", code, errOut)
	}
	d.mustKubectl("create", "configmap", "lit", "--from-literal=k=v")
	files := map[string]string{"app.yaml": "tier: backend", "app-config.configmap.yaml": "greeting: edited", "ssa.configmap.yaml": "manager: kubectl", "lit.configmap.yaml": "k: v"}
	for f, want := range files {
		if err := waitFor(10*time.Second, func() (bool, error) {
			b, err := os.ReadFile(filepath.Join(d.manifestDir, f))
			return strings.Contains(string(b), want), err
		}); err != nil {
			t.Fatalf("%s lacks %q: %v", f, want, err)
		}
	}
	d.waitKubectl(30*time.Second, "the label", func(s string) bool { return strings.Contains(s, "tier=backend") }, "get", "pod", "app", "--show-labels")
	if got := d.mustKubectl("get", "pod", "app", "-o", "jsonpath={.metadata.uid} {.status.containerStatuses[0].restartCount}"); got != uid+" 0" {
		t.Fatalf("after the in-place edits: %q, want %q", got, uid+" 0")
	}

	// delete --grace-period=1: SIGTERM (on the host's side of the
	// hostPath), and gone within the grace period (not the pod's 30 s).
	start := time.Now()
	d.mustKubectl("delete", "pod", "app", "--grace-period=1")
	if took := time.Since(start); took > 20*time.Second*waitScale {
		t.Fatalf("kubectl delete --grace-period=1 took %v", took)
	}
	if b, err := os.ReadFile(filepath.Join(marker, "term")); err != nil || !strings.Contains(string(b), "got TERM") {
		t.Fatalf("the container's SIGTERM: %v %q", err, b)
	}
	if _, err := os.Stat(filepath.Join(d.manifestDir, "app.yaml")); !os.IsNotExist(err) {
		t.Fatalf("app.yaml after delete: %v", err)
	}
	if n := len(podContainers(t, uid)); n != 0 {
		t.Fatalf("%d containers of the deleted pod left in containerd", n)
	}
	if _, _, code := d.kubectl("", "get", "pod", "app"); code == 0 {
		t.Fatal("get of the deleted pod succeeded")
	}
	// A bad object is refused, naming the field, and nothing is written.
	_, errOut, code = d.kubectl("apiVersion: v1\nkind: Pod\nmetadata: {name: bad}\nspec: {containers: [{name: c}]}\n", "apply", "-f", "-")
	if code == 0 || !strings.Contains(errOut, "spec.containers[0].image") {
		t.Fatalf("an invalid pod: exit %d %s", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(d.manifestDir, "bad.yaml")); !os.IsNotExist(err) {
		t.Fatalf("bad.yaml written: %v", err)
	}
}

// TestKubectlStreams: exec with stdin and exit codes, cp both ways, attach
// and port-forward (bytes both ways, two connections at once) through the
// real kubectl.
func TestKubectlStreams(t *testing.T) {
	d := newPodhostd(t)
	d.enableKubeAPI()
	d.start()
	d.useKubectl()
	d.writeManifest("web.yaml", webPod("web", ""))
	d.mustKubectl("wait", "--for=condition=Ready", "pod/web", "--timeout=120s")

	if out, _, code := d.kubectl("", "exec", "web", "--", "sh", "-c", "echo out; echo err >&2; exit 3"); code != 3 || out != "out\n" {
		t.Fatalf("exec: exit %d %q", code, out)
	}
	if out, _, code := d.kubectl("from-stdin\n", "exec", "-i", "web", "--", "cat"); code != 0 || out != "from-stdin\n" {
		t.Fatalf("exec -i: exit %d %q", code, out)
	}
	// exec -it: a terminal of the client's size from the start (through
	// script(1), which gives kubectl a terminal of 100x30).
	if script, err := exec.LookPath("script"); err == nil {
		tty := exec.Command(script, "-qec", "stty cols 100 rows 30; "+kubectlBin(t)+" exec -it web -- sh -c 'stty size; echo $TERM'", "/dev/null")
		tty.Env = append(os.Environ(), "KUBECONFIG="+d.kubeconfig, "HOME="+d.dir)
		// script's stdin stays open until the command ends: at EOF script
		// writes the terminal's EOF character to kubectl, which forwards it
		// (a NUL in raw mode, echoed as ^@ between the two lines).
		stdinR, stdinW, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		tty.Stdin = stdinR
		out, err := tty.Output()
		stdinR.Close()
		stdinW.Close()
		if got := strings.ReplaceAll(string(out), "\r", ""); err != nil || !strings.Contains(got, "30 100\nxterm") {
			t.Fatalf("exec -it: %v %q, want the size 30 100 and TERM=xterm", err, got)
		}
	} else {
		t.Logf("no script(1) for a terminal: exec -it not checked (%v)", err)
	}
	src := filepath.Join(d.dir, "up.txt")
	if err := os.WriteFile(src, []byte("copied up\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	d.mustKubectl("cp", src, "web:/tmp/up.txt")
	p := d.pod("web")
	pid := containerPID(t, p, "main")
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/root/tmp/up.txt", pid)); err != nil || string(b) != "copied up\n" {
		t.Fatalf("cp into the container (read from the host): %v %q", err, b)
	}
	down := filepath.Join(d.dir, "down.txt")
	d.mustKubectl("cp", "web:/www/index.html", down)
	if b, err := os.ReadFile(down); err != nil || string(b) != "hello-kube\n" {
		t.Fatalf("cp out of the container: %v %q", err, b)
	}

	// attach streams the container's output from now on.
	attach := exec.Command(kubectlBin(t), "attach", "web")
	attach.Env = append(os.Environ(), "KUBECONFIG="+d.kubeconfig, "HOME="+d.dir)
	aout, err := attach.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := attach.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = attach.Process.Kill(); _ = attach.Wait() }()
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(aout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	waitLine(t, lines, "tick ")

	port := testenv.FreePort(t)
	pf := exec.Command(kubectlBin(t), "port-forward", "pod/web", fmt.Sprintf("%d:8080", port))
	pf.Env = append(os.Environ(), "KUBECONFIG="+d.kubeconfig, "HOME="+d.dir)
	if err := pf.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = pf.Process.Kill(); _ = pf.Wait() }()
	url := "http://" + net.JoinHostPort("127.0.0.1", fmt.Sprint(port)) + "/"
	if err := waitFor(30*time.Second, func() (bool, error) {
		body, err := httpGet(url)
		return strings.Contains(body, "hello-kube"), err
	}); err != nil {
		t.Fatalf("port-forward: %v", err)
	}
	errs := make(chan error, 2)
	for range 2 { // two connections at once
		go func() {
			body, err := httpGet(url)
			if err == nil && !strings.Contains(body, "hello-kube") {
				err = fmt.Errorf("body %q", body)
			}
			errs <- err
		}()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatalf("concurrent port-forward connection: %v", err)
		}
	}
}
