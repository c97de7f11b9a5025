//go:build integration

package integration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/model/wellknown"
	"github.com/podhost/podhost/internal/testenv"
)

// The trust boundary (issue 31, docs/security.md): what images, containers
// and local users get is what they were given, checked on the host.

// importVariant builds a variant of the test image, imports it with
// `podhost images import` and removes it from containerd when t ends.
func importVariant(t *testing.T, v testenv.ImageVariant) {
	t.Helper()
	tarPath, err := testenv.BuildImageVariant(filepath.Join(testenv.CacheDir(), "images"), v)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(env.PodhostBin, "images", "import", tarPath,
		"--containerd-address", env.Address, "--namespace", env.Namespace).CombinedOutput()
	if err != nil {
		t.Fatalf("podhost images import %s: %v\n%s", tarPath, err, out)
	}
	t.Cleanup(func() {
		err := env.Client().ImageService().Delete(env.Context(context.Background()), v.Ref)
		if err != nil && !errors.Is(err, errdefs.ErrNotFound) {
			t.Errorf("delete image %s: %v", v.Ref, err)
		}
	})
}

// waitingReason waits until container main of pod name waits with reason
// and returns its message.
func waitingReason(d *podhostd, name, reason string) string {
	d.t.Helper()
	p := d.waitPod(name, 60*time.Second, reason, func(p *corev1.Pod) bool {
		cs := containerStatus(p, "main")
		return cs != nil && cs.State.Waiting != nil && cs.State.Waiting.Reason == reason
	})
	return containerStatus(p, "main").State.Waiting.Message
}

// TestImageUserBeyondUint32: an image whose USER is 4294967296 and whose
// /etc/passwd names a user "4294967296" with uid 0 (GO-2026-5378: containerd
// before v2.2.4 resolved it as that name) never runs as root. With
// runAsNonRoot the kubelet's check refuses it before anything is created
// (CreateContainerConfigError, the kubelet's message); without, containerd's
// oci.WithUser refuses the uid (CreateContainerError). Neither pod ever has
// a container in containerd.
func TestImageUserBeyondUint32(t *testing.T) {
	d := newPodhostd(t)
	const ref = "podhost.test/uidwrap:1"
	importVariant(t, testenv.ImageVariant{Ref: ref, User: "4294967296",
		Passwd: "4294967296:x:0:0:root:/root:/bin/sh\n"})
	d.start()
	pod := func(name, podSC string) string {
		return podManifest(name, fmt.Sprintf(`  restartPolicy: Never
%s  containers:
  - name: main
    image: %s
    command: ["sh", "-c", "id -u; sleep 3600"]
`, podSC, ref))
	}
	d.writeManifest("nonroot.yaml", pod("nonroot", "  securityContext: {runAsNonRoot: true}\n"))
	d.writeManifest("plain.yaml", pod("plain", ""))

	msg := waitingReason(d, "nonroot", "CreateContainerConfigError")
	if want := "container has runAsNonRoot and image has an invalid user id (4294967296). (Must be 1-(2147483647))"; !strings.Contains(msg, want) {
		t.Errorf("nonroot: message %q, want it to hold %q", msg, want)
	}
	msg = waitingReason(d, "plain", "CreateContainerError")
	if !strings.Contains(msg, "uid out of range") {
		t.Errorf("plain: message %q, want containerd's uid out of range", msg)
	}
	for _, name := range []string{"nonroot", "plain"} {
		if cs := podContainers(t, string(d.pod(name).UID)); len(cs) > 0 {
			t.Errorf("pod %s has containers %v in containerd", name, cs)
		}
	}
}

// asNobody runs script with /bin/sh as uid and gid 65534, an unprivileged
// local user of the host, and returns its combined output and error.
func asNobody(script string) (string, error) {
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// openToOthers lets other local users traverse dir (0711) until t ends:
// the test dirs are 0700, which would hide the state dir whatever its mode.
func openToOthers(t *testing.T, dir string) {
	t.Helper()
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o711); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Chmod(dir, fi.Mode().Perm()) })
}

// TestStateDirClosedToLocalUsers: a state dir left open (0777) is tightened
// to 0750 at start, and logged. Then an unprivileged host user (uid 65534),
// who can reach the test's dir, cannot read a pod's Secret volume file
// (0644 inside its tmpfs), write into its emptyDir (0777) or its
// termination log (0666), while the pod's non-root container reads the
// Secret, writes the emptyDir and its termination message.
func TestStateDirClosedToLocalUsers(t *testing.T) {
	d := newPodhostd(t)
	openToOthers(t, env.Dir)
	control := filepath.Join(d.dir, "control")
	if err := os.WriteFile(control, []byte("visible\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := asNobody("cat " + control); err != nil || out != "visible\n" {
		t.Fatalf("uid 65534 cannot read %s (%v: %s): the test proves nothing", control, err, out)
	}
	if err := os.MkdirAll(d.stateDir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(d.stateDir, 0o777); err != nil {
		t.Fatal(err)
	}
	d.start()
	if fi, err := os.Stat(d.stateDir); err != nil || fi.Mode().Perm() != 0o750 {
		t.Fatalf("state dir after start: %v %v, want mode 0750", fi.Mode(), err)
	}
	if !strings.Contains(d.logs(), "tightened a directory other local users could open") {
		t.Errorf("the tightening is not logged:\n%s", d.logs())
	}

	d.writeManifestMode("app.yaml", `apiVersion: v1
kind: Secret
metadata: {name: creds}
stringData: {password: s3cret}
---
`+podManifest("app", fmt.Sprintf(`  terminationGracePeriodSeconds: 1
  securityContext: {runAsUser: 1000, runAsGroup: 1000, fsGroup: 2000}
  volumes:
  - {name: sec, secret: {secretName: creds}}
  - {name: scratch, emptyDir: {}}
  containers:
  - name: main
    image: %s
    volumeMounts:
    - {name: sec, mountPath: /etc/sec}
    - {name: scratch, mountPath: /scratch}
    command: ["sh", "-c", "cat /etc/sec/password && echo hi > /scratch/f && echo bye > /dev/termination-log && echo READY; sleep 3600"]
`, env.ImageRef)), 0o600)
	p := d.waitRunning("app")
	var out string
	if err := waitFor(30*time.Second, func() (bool, error) {
		out = readLog(t, d, p, "main", 0)
		return strings.Contains(out, "READY"), nil
	}); err != nil || !strings.Contains(out, "s3cret") {
		t.Fatalf("the pod's container did not read its Secret and write its volumes: %v\n%s", err, out)
	}

	pod := filepath.Join(d.stateDir, "pods", string(p.UID))
	secret := filepath.Join(pod, "volumes", "secret", "sec", "password")
	scratch := filepath.Join(pod, "volumes", "empty-dir", "scratch")
	termLogs, _ := filepath.Glob(filepath.Join(pod, "main.*.termination-log"))
	if len(termLogs) != 1 {
		t.Fatalf("termination logs of main: %v", termLogs)
	}
	if b, err := os.ReadFile(termLogs[0]); err != nil || string(b) != "bye\n" {
		t.Errorf("termination log %s: %q %v, want the container's message", termLogs[0], b, err)
	}
	if b, err := os.ReadFile(filepath.Join(scratch, "f")); err != nil || string(b) != "hi\n" {
		t.Errorf("emptyDir file: %q %v, want the container's", b, err)
	}
	for what, script := range map[string]string{
		"read the Secret file":        "cat " + secret,
		"write into the emptyDir":     "echo x > " + filepath.Join(scratch, "intruder"),
		"write the termination log":   "echo forged > " + termLogs[0],
		"list the pods' directory":    "ls " + filepath.Join(d.stateDir, "pods"),
		"read the state dir's db dir": "ls " + d.stateDir,
	} {
		if out, err := asNobody(script); err == nil || strings.Contains(out, "s3cret") {
			t.Errorf("uid 65534 could %s (%s): %q", what, script, out)
		}
	}
}

// TestManifestURLPodSecurity: the manifest URL's default standard is
// baseline. A privileged pod it serves never runs: `get pods` names the
// URL, the pod, the level and the field with the Pod Security Admission
// library's message; its other pods keep running (same UID, no restart),
// and a pod that meets the level is added beside them.
func TestManifestURLPodSecurity(t *testing.T) {
	srv := &manifestHTTP{}
	srv.listen(t)
	t.Cleanup(srv.stop)
	url := "http://" + srv.addr + "/pods.yaml"
	d := newPodhostd(t)
	useManifestURL(t, d, url)
	t.Cleanup(func() { srv.set(emptyList, 0) })
	srv.set(sleeper("web", 1, ""), 0)
	d.start()
	web := d.waitRunning("web")

	priv := sleeper("priv", 1, "    securityContext: {privileged: true}\n")
	srv.set(sleeper("web", 1, "")+"---\n"+priv, 0)
	want := fmt.Sprintf(`%s: pod default/priv violates PodSecurity "baseline:latest" (podSecurity.manifestURL): privileged (container "main" must not set securityContext.privileged=true)`, url)
	d.waitCLI(30*time.Second, "the refusal", func(_, stderr string) bool { return strings.Contains(stderr, want) }, "get", "pods")

	srv.set(sleeper("web", 1, "")+"---\n"+priv+"---\n"+sleeper("api", 1, ""), 0)
	d.waitRunning("api")
	if p := d.pod("priv"); p != nil {
		t.Errorf("the refused pod is in the API: %s", statusSummary(p))
	}
	cs, err := env.Client().Containers(env.Context(context.Background()), fmt.Sprintf("labels.%q==priv", wellknown.LabelPodName))
	if err != nil || len(cs) > 0 {
		t.Errorf("containers of the refused pod: %d %v", len(cs), err)
	}
	if p := d.pod("web"); p == nil || p.UID != web.UID || !allRunning(p) || p.Status.ContainerStatuses[0].RestartCount != 0 {
		t.Errorf("web after the refusal: %s, want it untouched", statusSummary(p))
	}
}
