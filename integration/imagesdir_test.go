//go:build integration

package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/core/images"

	"github.com/podhost/podhost/internal/model/wellknown"
	"github.com/podhost/podhost/internal/testenv"
)

// appRef names an image of this test only (the suite shares a namespace):
// podhost.test resolves nowhere, so it can only come from an archive.
func appRef(t *testing.T, name string) string {
	return fmt.Sprintf("podhost.test/%s/%s:1", strings.ToLower(regexp.MustCompile(`[^a-zA-Z0-9]+`).ReplaceAllString(t.Name(), "-")), name)
}

func podWithImage(name, image string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: app, image: %s, imagePullPolicy: IfNotPresent, command: [sh, -c, "cat /etc/app-id; exec sleep 3600"]}
`, name, image)
}

// imagesByName reads containerd's image records of the namespace.
func imagesByName(t *testing.T) map[string]images.Image {
	t.Helper()
	ctx := env.Context(context.Background())
	list, err := env.Client().ImageService().List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]images.Image{}
	for _, img := range list {
		out[img.Name] = img
	}
	return out
}

// TestImagesDirOfflineBoot: a box with no registry boots with its pods
// Running from the archives in its images directory (OCI layout, docker
// archive gzip, OCI zstd), a broken archive beside them is one error line
// in the log and in check and holds nothing up; the second boot skips
// every archive without reading it (timed, logged); an archive dropped in
// while podhost runs starts the pod that waited for it; image GC with
// thresholds forced to 0 keeps every pinned image and removes an unpinned
// unused one.
func TestImagesDirOfflineBoot(t *testing.T) {
	d := newPodhostd(t)
	imagesDir := filepath.Join(d.stateDir, "images") // the default: <stateDir>/images
	if err := os.MkdirAll(imagesDir, 0o700); err != nil {
		t.Fatal(err)
	}
	archives := []struct {
		file string
		img  testenv.AppImage
	}{
		{"a-oci.tar", testenv.AppImage{Ref: appRef(t, "a"), Payload: 1 << 20}},
		{"b-docker.tar.gz", testenv.AppImage{Ref: appRef(t, "b"), Payload: 1 << 20, Format: "docker", Compression: "gzip"}},
		{"c-oci.tar.zst", testenv.AppImage{Ref: appRef(t, "c"), Payload: 1 << 20, Compression: "zstd"}},
	}
	for _, a := range archives {
		if err := testenv.BuildAppImage(filepath.Join(imagesDir, a.file), a.img); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(imagesDir, "broken.tar"), []byte("not a tar archive at all"), 0o644); err != nil {
		t.Fatal(err)
	}
	for i, a := range archives {
		d.writeManifest(fmt.Sprintf("app%d.yaml", i), podWithImage(fmt.Sprintf("app%d", i), a.img.Ref))
	}
	// A pod whose image is not there yet: it arrives while podhost runs.
	late := testenv.AppImage{Ref: appRef(t, "late")}
	d.writeManifest("late.yaml", podWithImage("late", late.Ref))
	// Keeps the suite's test image in use while image GC runs at 0 %.
	d.writeManifest("keep.yaml", fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata: {name: keep}\nspec:\n  terminationGracePeriodSeconds: 1\n  containers:\n  - {name: c, image: %s, command: [sleep, '3600']}\n", env.ImageRef))

	d.start()
	for i := range archives {
		d.waitRunning(fmt.Sprintf("app%d", i))
	}
	byName := imagesByName(t)
	for _, a := range archives {
		img, ok := byName[a.img.Ref]
		if !ok {
			t.Fatalf("%s not in containerd", a.img.Ref)
		}
		if got := img.Labels[wellknown.LabelImagePinned]; got != "images-dir:"+a.file {
			t.Errorf("%s: pinned label %q, want images-dir:%s", a.img.Ref, got, a.file)
		}
	}
	out, _ := d.cli("check", "--containerd-address", env.Address)
	if !strings.Contains(out, "warn  images-dir    images dir: broken.tar: ") {
		t.Errorf("check does not name the broken archive:\n%s", out)
	}
	if n := strings.Count(d.logs(), "images dir: broken.tar: "); n != 1 {
		t.Errorf("the broken archive is logged %d times, want once:\n%s", n, d.logs())
	}
	ls := d.mustCLI("images", "ls", "--containerd-address", env.Address, "--namespace", env.Namespace)
	for _, a := range archives {
		if !regexp.MustCompile(regexp.QuoteMeta(a.img.Ref) + `\s.*\simages-dir:` + regexp.QuoteMeta(a.file)).MatchString(ls) {
			t.Errorf("images ls does not show %s pinned from %s:\n%s", a.img.Ref, a.file, ls)
		}
	}

	// An archive landing while podhost runs: the waiting pod starts.
	if err := testenv.BuildAppImage(filepath.Join(imagesDir, "late.tar"), late); err != nil {
		t.Fatal(err)
	}
	d.waitRunning("late")

	// Second boot: every archive skipped, none read.
	before := imagesByName(t)
	d.kill(syscall.SIGTERM)
	d.out.Reset()
	d.start()
	m := regexp.MustCompile(`images dir read.* imported=0 skipped=4 failed=1 took=(\S+)`).FindStringSubmatch(d.logs())
	if m == nil {
		t.Fatalf("second boot did not skip every archive:\n%s", d.logs())
	}
	took, err := time.ParseDuration(m[1])
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("FIGURE images dir, second boot: 4 archives skipped in %v", took)
	if took > 5*time.Second*waitScale {
		t.Errorf("skipping 4 imported archives took %v", took)
	}
	after := imagesByName(t)
	for _, ref := range []string{archives[0].img.Ref, archives[1].img.Ref, archives[2].img.Ref, late.Ref} {
		if !after[ref].UpdatedAt.Equal(before[ref].UpdatedAt) {
			t.Errorf("%s was imported again (updated %v, was %v)", ref, after[ref].UpdatedAt, before[ref].UpdatedAt)
		}
	}
	if n := strings.Count(d.logs(), "images dir: broken.tar: "); n != 1 {
		t.Errorf("the broken archive is logged %d times on the second boot, want once", n)
	}
	testImagesDirGC(t, d, archives[0].img.Ref)
}

// testImagesDirGC: image GC at thresholds 0 with no pod using the pinned
// images: an unpinned unused image goes (proof GC ran), pinned ones stay.
func testImagesDirGC(t *testing.T, d *podhostd, pinned string) {
	decoyPath := filepath.Join(d.dir, "decoy.tar")
	decoy := testenv.AppImage{Ref: appRef(t, "decoy")}
	if err := testenv.BuildAppImage(decoyPath, decoy); err != nil {
		t.Fatal(err)
	}
	d.mustCLI("images", "import", decoyPath, "--containerd-address", env.Address, "--namespace", env.Namespace)
	for _, name := range []string{"app0.yaml", "app1.yaml", "app2.yaml", "late.yaml"} {
		d.removeManifest(name)
	}
	d.kill(syscall.SIGTERM)
	// The test containerd's root is the image filesystem GC measures.
	appendConfig(t, d, fmt.Sprintf("imageFSPath: %s\nimageGCHighThresholdPercent: 0\nimageGCLowThresholdPercent: 0\n", env.Root))
	d.start()
	if err := waitFor(120*time.Second, func() (bool, error) {
		_, ok := imagesByName(t)[decoy.Ref]
		return !ok, nil
	}); err != nil {
		t.Fatalf("image GC at 0%% did not remove the unpinned, unused %s:\n%s", decoy.Ref, d.logs())
	}
	left := imagesByName(t)
	for _, ref := range []string{pinned, appRef(t, "b"), appRef(t, "c"), appRef(t, "late"), env.ImageRef} {
		if _, ok := left[ref]; !ok {
			t.Errorf("image GC removed %s (pinned or in use)", ref)
		}
	}
}
