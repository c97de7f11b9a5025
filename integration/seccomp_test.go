//go:build integration

package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// TestSeccompLocalhostProfile: a seccomp Localhost profile is read from
// <stateDir>/seccomp/<localhostProfile>. A missing profile fails the
// container's create (CreateContainerError, as the kubelet); a present one
// filters the container (mkdir denied by the profile, Seccomp: 2).
func TestSeccompLocalhostProfile(t *testing.T) {
	d := newPodhostd(t)
	d.start()
	withProfile := func(name, profile string) string {
		return sleeper(name, 1, "    securityContext:\n      seccompProfile: {type: Localhost, localhostProfile: "+profile+"}\n")
	}
	d.writeManifest("missing.yaml", withProfile("missing", "profiles/missing.json"))
	p := d.waitPod("missing", 30*time.Second, "CreateContainerError", func(p *corev1.Pod) bool {
		cs := containerStatus(p, "main")
		return cs != nil && cs.State.Waiting != nil && cs.State.Waiting.Reason == "CreateContainerError"
	})
	if msg := containerStatus(p, "main").State.Waiting.Message; !strings.Contains(msg, "missing.json") {
		t.Errorf("waiting message %q does not name the profile", msg)
	}

	dir := filepath.Join(d.stateDir, "seccomp", "profiles")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	profile := `{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["mkdir","mkdirat"],"action":"SCMP_ACT_ERRNO"}]}`
	if err := os.WriteFile(filepath.Join(dir, "nomkdir.json"), []byte(profile), 0o644); err != nil {
		t.Fatal(err)
	}
	d.writeManifest("filtered.yaml", withProfile("filtered", "profiles/nomkdir.json"))
	d.waitRunning("filtered")
	out, _, code := d.execCLI("", "filtered", "--", "sh", "-c", "grep '^Seccomp:' /proc/self/status; mkdir /tmp/x && echo made")
	if code == 0 || !strings.Contains(out, "Seccomp:\t2") || strings.Contains(out, "made") {
		t.Fatalf("exec in filtered container: code %d, out %q; want seccomp mode 2 and mkdir denied", code, out)
	}
}
