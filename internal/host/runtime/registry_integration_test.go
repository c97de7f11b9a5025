//go:build integration

package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/core/remotes/docker"
	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/host/runtime"
	"github.com/podhost/podhost/internal/testenv"
)

// startRegistry starts a registry (stopped at the end of the test) and
// pushes the test image to it as <addr>/podhost/busybox-rt:1. The pushed
// name is never tagged locally; the test's cleanup deletes it (only it)
// once the test pulled it.
func startRegistry(t *testing.T, ctx context.Context, rt *runtime.Runtime, opts testenv.RegistryOptions) (*testenv.Registry, string, runtime.Image) {
	t.Helper()
	local := importImage(t, ctx, rt)
	reg, remote := env.PushedRegistry(t, ctx, opts, "podhost/busybox-rt:1")
	return reg, remote, local
}

// checkPulled checks an image pulled from the registry: the test image's
// content under the remote name, now present for the other policies.
func checkPulled(t *testing.T, ctx context.Context, rt *runtime.Runtime, img, local runtime.Image, remote string) {
	t.Helper()
	if img.Ref != remote || img.Digest != local.Digest || len(img.Config.Cmd) == 0 {
		t.Fatalf("pulled %+v, want ref %s digest %s", img, remote, local.Digest)
	}
	got, err := rt.EnsureImage(ctx, remote, corev1.PullNever)
	if err != nil || got.Digest != local.Digest {
		t.Fatalf("Never after pull: %+v %v", got, err)
	}
}

func TestRegistryPull(t *testing.T) {
	rt := connect(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, remote, local := startRegistry(t, ctx, rt, testenv.RegistryOptions{})

	if _, err := rt.EnsureImage(ctx, remote, corev1.PullNever); !errors.Is(err, runtime.ErrImageNeverPull) {
		t.Fatalf("Never before pull: %v", err)
	}
	img, err := rt.EnsureImage(ctx, remote, corev1.PullAlways)
	if err != nil {
		t.Fatalf("pull from %s: %v", remote, err)
	}
	checkPulled(t, ctx, rt, img, local, remote)
	// Always pulls again, and works again.
	if _, err := rt.EnsureImage(ctx, remote, corev1.PullAlways); err != nil {
		t.Fatalf("second pull: %v", err)
	}
}

func TestRegistryPullAuth(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	reg, remote, local := startRegistry(t, ctx, connect(t), testenv.RegistryOptions{Htpasswd: true})
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "good.json"), filepath.Join(dir, "bad.json")
	if err := testenv.WriteDockerConfig(good, reg.Addr, reg.Creds); err != nil {
		t.Fatal(err)
	}
	if err := testenv.WriteDockerConfig(bad, reg.Addr, testenv.Credentials{User: reg.Creds.User, Password: "wrong"}); err != nil {
		t.Fatal(err)
	}

	// No credentials for the host: containerd's authorizer gives up
	// ("authorization failed: no basic auth credentials"); wrong ones: the
	// registry answers 401 Unauthorized.
	noCreds := func(err error) bool { return errors.Is(err, docker.ErrInvalidAuthorization) }
	wrongCreds := func(err error) bool { return strings.Contains(err.Error(), "401 Unauthorized") }
	for _, tc := range []struct {
		name  string
		files []string
		match func(error) bool
	}{
		{"no auth files", nil, noCreds},
		{"no entry for the host", []string{filepath.Join(dir, "absent.json"), writeOtherHost(t, dir)}, noCreds},
		{"wrong password", []string{bad}, wrongCreds},
	} {
		rt := connect(t)
		rt.AuthFiles = tc.files
		for _, policy := range []corev1.PullPolicy{corev1.PullIfNotPresent, corev1.PullAlways} {
			_, err := rt.EnsureImage(ctx, remote, policy)
			if !errors.Is(err, runtime.ErrImagePull) || !tc.match(err) {
				t.Fatalf("%s, %s: got %v, want an ErrImagePull auth failure", tc.name, policy, err)
			}
		}
	}

	rt := connect(t)
	rt.AuthFiles = []string{filepath.Join(dir, "absent.json"), good}
	img, err := rt.EnsureImage(ctx, remote, corev1.PullAlways)
	if err != nil {
		t.Fatalf("pull with credentials: %v", err)
	}
	checkPulled(t, ctx, rt, img, local, remote)
}

// writeOtherHost writes a docker config.json with credentials for another
// registry only.
func writeOtherHost(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "other.json")
	err := os.WriteFile(p, []byte(fmt.Sprintf(`{"auths":{"registry.example:5000":{"auth":%q}}}`, "dTpw")), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
