//go:build integration

package integration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containerd/errdefs"

	"github.com/podhost/podhost/internal/testenv"
)

// pushedAppImage builds a two-layer image (the test image's busybox layer
// and one with /etc/app-id), pushes it to a registry the test starts and
// returns its remote ref; nothing of it is left in containerd under its
// local name, so a pod's pull fetches the remote one.
func pushedAppImage(t *testing.T, repo string) string {
	t.Helper()
	ctx := env.Context(testCtx(t, 2*time.Minute))
	reg := testenv.TestRegistry(t, ctx, testenv.RegistryOptions{})
	local, remote := "podhost.test/"+repo, reg.Ref("podhost/"+repo)
	tarball := filepath.Join(t.TempDir(), "app.tar")
	if err := testenv.BuildAppImage(tarball, testenv.AppImage{Ref: local, Payload: 4096, Seed: 33}); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(tarball)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := env.Client().Import(ctx, f); err != nil {
		t.Fatalf("import %s: %v", tarball, err)
	}
	if err := testenv.PushImage(ctx, env.Client(), local, remote, reg.Creds); err != nil {
		t.Fatal(err)
	}
	for _, ref := range []string{local, remote} {
		t.Cleanup(func() {
			err := env.Client().ImageService().Delete(env.Context(context.Background()), ref)
			if err != nil && !errors.Is(err, errdefs.ErrNotFound) {
				t.Errorf("delete image %s: %v", ref, err)
			}
		})
	}
	if err := env.Client().ImageService().Delete(ctx, local); err != nil {
		t.Fatal(err)
	}
	return remote
}

// mountOptions returns the per-mount options of the mount at target in
// pid's mount namespace ("" if none).
func mountOptions(t *testing.T, pid int, target string) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/mountinfo", pid))
	if err != nil {
		t.Fatal(err)
	}
	opts := ""
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) > 5 && f[4] == target {
			opts = f[5] // the last one mounted there wins
		}
	}
	return opts
}

// TestImageVolume: a Volume.image of a two-layer image pulled from the
// suite's registry is mounted, its layers merged, read-only and noexec in
// the container (whole and through a subPath), its image stays in
// containerd while the pod runs, and deleting the pod leaves no mount,
// lease or snapshot of it.
func TestImageVolume(t *testing.T) {
	ref := pushedAppImage(t, "imgvol:1")
	d := newPodhostd(t)
	d.start()
	d.writeManifest("imgvol.yaml", podManifest("imgvol", fmt.Sprintf(`  terminationGracePeriodSeconds: 1
  volumes:
  - name: data
    image: {reference: %s, pullPolicy: Always}
  containers:
  - name: main
    image: %s
    command: ["sleep", "3600"]
    volumeMounts:
    - {name: data, mountPath: /data}
    - {name: data, mountPath: /app-etc, subPath: etc}
`, ref, env.ImageRef)))
	p := d.waitRunning("imgvol")
	exec := func(script string) (string, error) {
		return d.cli("exec", "imgvol", "--", "sh", "-c", script)
	}
	// Both layers: the app layer's file and the busybox layer's binary.
	if out, err := exec("cat /data/etc/app-id /app-etc/app-id; test -x /data/bin/busybox && echo busybox"); err != nil ||
		out != "podhost.test/imgvol:1\npodhost.test/imgvol:1\nbusybox\n" {
		t.Fatalf("image volume's files (err %v):\n%s", err, out)
	}
	for _, try := range []struct{ script, want string }{
		{"touch /data/new", "Read-only file system"},
		{"echo x > /app-etc/app-id", "Read-only file system"},
		{"/data/bin/busybox true", "Permission denied"},
	} {
		if out, err := exec(try.script); err == nil || !strings.Contains(out, try.want) {
			t.Errorf("%s in the image volume: err %v, output %q: want refused with %q", try.script, err, out, try.want)
		}
	}
	pid := containerPID(t, p, "main")
	for _, mnt := range []string{"/data", "/app-etc"} {
		opts := "," + mountOptions(t, pid, mnt) + ","
		if !strings.Contains(opts, ",ro,") || !strings.Contains(opts, ",noexec,") {
			t.Errorf("%s mounted with %q in the container, want ro and noexec", mnt, opts)
		}
	}
	ctx := env.Context(testCtx(t, time.Minute))
	if _, err := env.Client().GetImage(ctx, ref); err != nil {
		t.Errorf("the volume's image %s is not in containerd: %v", ref, err)
	}
	host := filepath.Join(d.stateDir, "pods", string(p.UID), "volumes", "image", "data")
	if mountOptions(t, os.Getpid(), host) == "" {
		t.Errorf("no image volume mounted at %s on the host", host)
	}

	d.removeManifest("imgvol.yaml")
	d.waitPodGone(t, p)
	if err := waitFor(60*time.Second, func() (bool, error) {
		return mountOptions(t, os.Getpid(), host) == "", nil
	}); err != nil {
		t.Errorf("image volume still mounted at %s", host)
	}
	lease := "podhost-image-volumes-" + string(p.UID)
	if err := waitFor(60*time.Second, func() (bool, error) {
		ls, err := env.Client().LeasesService().List(ctx, fmt.Sprintf("id==%q", lease))
		return len(ls) == 0, err
	}); err != nil {
		t.Errorf("lease %s of the pod's image volumes left: %v", lease, err)
	}
	if _, err := env.Client().SnapshotService(env.Snapshotter).Stat(ctx, lease+"-data"); !errdefs.IsNotFound(err) {
		t.Errorf("snapshot %s-data: %v, want it gone", lease, err)
	}
}
