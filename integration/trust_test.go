//go:build integration

package integration

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	corev1 "k8s.io/api/core/v1"

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
