//go:build integration

package integration

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/testenv"
)

// registryImage starts a registry for the test, pushes the test image to
// it as <addr>/podhost/busybox:1 and returns the registry and that ref.
// Call it before newPodhostd: its cleanups (stop the registry, delete the
// pulled image name, and only it) then run after the daemon's teardown.
func registryImage(t *testing.T, opts testenv.RegistryOptions) (*testenv.Registry, string) {
	t.Helper()
	ctx := testCtx(t, 2*time.Minute)
	testImage(t)
	reg, ref := env.PushedRegistry(t, ctx, opts, "podhost/busybox:1")
	return reg, ref
}

// registryPod is a pod running image from the registry, pulled every time.
func registryPod(name, image string) string {
	return podManifest(name, fmt.Sprintf(`  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: %s
    imagePullPolicy: Always
    command: ["sleep", "3600"]
`, image))
}

// appendConfig adds lines to the daemon's config.yaml (before start).
func appendConfig(t testing.TB, d *podhostd, lines string) {
	t.Helper()
	f, err := os.OpenFile(d.configPath, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(lines); err != nil {
		t.Fatal(err)
	}
}

// TestRegistryPull: a pod whose image lives in a registry on 127.0.0.1
// (plain HTTP, no auth) is pulled and runs.
func TestRegistryPull(t *testing.T) {
	_, ref := registryImage(t, testenv.RegistryOptions{})
	d := newPodhostd(t)
	d.start()
	d.writeManifest("pulled.yaml", registryPod("pulled", ref))
	p := d.waitRunning("pulled")
	if cs := containerStatus(p, "main"); cs == nil || !strings.Contains(cs.Image, ref) {
		t.Fatalf("container status %+v, want image %s", cs, ref)
	}
	if _, err := env.Client().GetImage(env.Context(context.Background()), ref); err != nil {
		t.Fatalf("pulled image %s not in containerd: %v", ref, err)
	}
}

// TestRegistryPullAuth: with htpasswd auth, the pod waits in
// ErrImagePull/ImagePullBackOff (with a message naming the authorization
// failure) while the daemon's auth file is missing, and runs once a docker
// config.json with the credentials is in place: auth files are re-read on
// every pull, no daemon restart needed.
func TestRegistryPullAuth(t *testing.T) {
	reg, ref := registryImage(t, testenv.RegistryOptions{Htpasswd: true})
	d := newPodhostd(t)
	authFile := filepath.Join(d.dir, "auth", "config.json")
	if err := os.MkdirAll(filepath.Dir(authFile), 0o700); err != nil {
		t.Fatal(err)
	}
	appendConfig(t, d, fmt.Sprintf("authFiles: [%q]\n", authFile))
	d.start()
	d.writeManifest("private.yaml", registryPod("private", ref))

	var msg string
	d.waitPod("private", 60*time.Second, "ErrImagePull (authorization)", func(p *corev1.Pod) bool {
		cs := containerStatus(p, "main")
		if cs == nil || cs.State.Waiting == nil || cs.State.Waiting.Reason != "ErrImagePull" {
			return false
		}
		msg = cs.State.Waiting.Message
		return true
	})
	// "authorization failed: no basic auth credentials" (containerd) or a
	// registry's "401 Unauthorized".
	if !strings.Contains(strings.ToLower(msg), "authoriz") {
		t.Errorf("ErrImagePull message %q does not name the authorization failure", msg)
	}
	if p := d.pod("private"); p != nil && allRunning(p) {
		t.Fatal("pod running without credentials")
	}

	if err := testenv.WriteDockerConfig(authFile, reg.Addr, reg.Creds); err != nil {
		t.Fatal(err)
	}
	// The next retry comes after the image-pull back-off (10 s, doubling).
	d.waitPod("private", 2*time.Minute, "running after credentials were added", allRunning)
}

// TestRegistryPullImagePullSecret: a private registry (htpasswd) pulled
// through the pod's imagePullSecrets — a kubernetes.io/dockerconfigjson
// Secret beside the pod — with no global auth file at all.
func TestRegistryPullImagePullSecret(t *testing.T) {
	reg, ref := registryImage(t, testenv.RegistryOptions{Htpasswd: true})
	d := newPodhostd(t)
	appendConfig(t, d, fmt.Sprintf("authFiles: [%q]\n", filepath.Join(d.dir, "no-such-auth.json")))
	d.start()
	cfgPath := filepath.Join(d.dir, "dockerconfig.json")
	if err := testenv.WriteDockerConfig(cfgPath, reg.Addr, reg.Creds); err != nil {
		t.Fatal(err)
	}
	dockercfg, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	manifest := fmt.Sprintf(`apiVersion: v1
kind: Secret
metadata: {name: regcred}
type: kubernetes.io/dockerconfigjson
data:
  .dockerconfigjson: %s
---
`, base64.StdEncoding.EncodeToString(dockercfg)) + strings.Replace(registryPod("private", ref),
		"  containers:", "  imagePullSecrets: [{name: regcred}]\n  containers:", 1)
	d.writeManifestMode("private.yaml", manifest, 0o600)
	p := d.waitPod("private", 60*time.Second, "running with the pull secret", allRunning)
	if cs := containerStatus(p, "main"); cs == nil || !strings.Contains(cs.Image, ref) {
		t.Fatalf("container status %+v, want image %s", cs, ref)
	}
}
