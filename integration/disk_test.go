//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/core/content"
	"github.com/containerd/containerd/v2/core/images"
	"github.com/containerd/containerd/v2/core/leases"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/testenv"
)

// logFiles lists the file names in the log dir of pod's container.
func (d *podhostd) logFiles(p *corev1.Pod, container string) []string {
	dir := filepath.Join(d.logDir, fmt.Sprintf("%s_%s_%s", p.Namespace, p.Name, p.UID), container)
	ents, _ := os.ReadDir(dir)
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// TestLogGCKeepsTwoInstances: a crash-looping container leaves the log
// files of its current and previous instances only; once the pod is
// removed and cleaned up, its log dir is gone. The crash-loop back-off
// (10 s, doubling; no test-only setting) makes this 3 restarts, ~35 s.
func TestLogGCKeepsTwoInstances(t *testing.T) {
	d := newPodhostd(t)
	appendConfig(t, d, "crashLoopBackOffMax: 1s\n") // 20 restarts in seconds, not an hour
	d.start()
	d.writeManifest("crash.yaml", podManifest("crash", `  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: `+testenv.ImageRef+`
    command: ["sh", "-c", "echo instance; exit 1"]
`))
	p := d.waitPod("crash", 2*time.Minute, "20 restarts", func(p *corev1.Pod) bool {
		cs := containerStatus(p, "main")
		return cs != nil && cs.RestartCount >= 20
	})
	var files []string
	err := waitFor(30*time.Second, func() (bool, error) {
		cs := containerStatus(d.pod("crash"), "main")
		n := int(cs.RestartCount)
		files = d.logFiles(p, "main")
		want := []string{fmt.Sprintf("%d.log", n-1), fmt.Sprintf("%d.log", n)}
		return slices.Equal(files, want), nil
	})
	if err != nil {
		t.Fatalf("log files %v, want the last two instances' only\n%s", files, d.logs())
	}
	if out := d.mustCLI("logs", "--previous", "crash"); !strings.Contains(out, "instance") {
		t.Errorf("logs --previous = %q", out)
	}

	podDir := filepath.Join(d.logDir, fmt.Sprintf("%s_%s_%s", p.Namespace, p.Name, p.UID))
	d.removeManifest("crash.yaml")
	err = waitFor(60*time.Second, func() (bool, error) {
		_, err := os.Stat(podDir)
		return os.IsNotExist(err), nil
	})
	if err != nil {
		t.Fatalf("log dir %s still there after the pod's removal\n%s", podDir, d.logs())
	}
}

// unusedImage makes an image with its own digest (the test image's layer,
// a config with one more label) named ref.
func unusedImage(t *testing.T, ref string) {
	t.Helper()
	ctx := env.Context(testCtx(t, time.Minute))
	c := env.Client()
	ctx, done, err := c.WithLease(ctx, leases.WithExpiration(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := done(context.WithoutCancel(ctx)); err != nil {
			t.Errorf("release lease: %v", err)
		}
	}()
	base, err := c.GetImage(ctx, testenv.ImageRef)
	if err != nil {
		t.Fatal(err)
	}
	cs := c.ContentStore()
	mf, err := images.Manifest(ctx, cs, base.Target(), base.Platform())
	if err != nil {
		t.Fatal(err)
	}
	var cfg ocispec.Image
	raw, err := content.ReadBlob(ctx, cs, mf.Config)
	if err == nil {
		err = json.Unmarshal(raw, &cfg)
	}
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Config.Labels == nil {
		cfg.Config.Labels = map[string]string{}
	}
	cfg.Config.Labels["podhost.test/gc"] = "unused"
	mf.Config = writeJSON(ctx, t, cs, mf.Config.MediaType, cfg, nil)
	gcRefs := map[string]string{"containerd.io/gc.ref.content.config": mf.Config.Digest.String()}
	for i, l := range mf.Layers {
		gcRefs[fmt.Sprintf("containerd.io/gc.ref.content.l.%d", i)] = l.Digest.String()
	}
	target := writeJSON(ctx, t, cs, mf.MediaType, mf, gcRefs)
	if _, err := c.ImageService().Create(ctx, images.Image{Name: ref, Target: target}); err != nil {
		t.Fatal(err)
	}
}

func writeJSON(ctx context.Context, t *testing.T, cs content.Store, mediaType string, v any, labels map[string]string) ocispec.Descriptor {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	desc := ocispec.Descriptor{MediaType: mediaType, Digest: digest.FromBytes(b), Size: int64(len(b))}
	if err := content.WriteBlob(ctx, cs, desc.Digest.String(), strings.NewReader(string(b)), desc, content.WithLabels(labels)); err != nil {
		t.Fatal(err)
	}
	return desc
}

// TestImageGC: with tiny image-fs thresholds, an image no pod uses is
// removed by image GC; the image of a running pod stays, the pod runs on.
func TestImageGC(t *testing.T) {
	const unused = "podhost.test/unused:gc"
	d := newPodhostd(t)
	unusedImage(t, unused)
	t.Cleanup(func() { _ = env.Client().ImageService().Delete(env.Context(context.Background()), unused) })
	appendConfig(t, d, fmt.Sprintf("imageFSPath: %s\nimageGCHighThresholdPercent: 1\nimageGCLowThresholdPercent: 0\n", env.Root))
	d.start()
	d.writeManifest("keep.yaml", podManifest("keep", `  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: `+testenv.ImageRef+`
    command: ["sleep", "3600"]
`))
	d.waitRunning("keep")
	ctx := env.Context(context.Background())
	err := waitFor(90*time.Second, func() (bool, error) {
		_, err := env.Client().ImageService().Get(ctx, unused)
		return err != nil, nil
	})
	if err != nil {
		t.Fatalf("unused image %s not removed by image GC\n%s", unused, d.logs())
	}
	if _, err := env.Client().ImageService().Get(ctx, testenv.ImageRef); err != nil {
		t.Fatalf("image of a running pod removed: %v", err)
	}
	if p := d.pod("keep"); !allRunning(p) {
		t.Fatalf("pod not running after image GC: %s", statusSummary(p))
	}
}

// TestImagesPullRmPrune: `images pull` from the test registry prints a
// line per blob and the pulled ref; `images rm` removes it; `images
// prune` removes an image no manifest references and keeps one a
// manifest references.
func TestImagesPullRmPrune(t *testing.T) {
	_, ref := registryImage(t, testenv.RegistryOptions{})
	d := newPodhostd(t)
	d.start()
	ctrFlags := []string{"--containerd-address", env.Address, "--namespace", env.Namespace}
	out := d.mustCLI(append([]string{"images", "pull", ref}, ctrFlags...)...)
	if !strings.Contains(out, "layer ") || !strings.Contains(out, "pulled "+ref) {
		t.Fatalf("images pull output:\n%s", out)
	}
	ctx := env.Context(context.Background())
	if _, err := env.Client().ImageService().Get(ctx, ref); err != nil {
		t.Fatalf("pulled image not in containerd: %v", err)
	}
	d.mustCLI(append([]string{"images", "rm", ref}, ctrFlags...)...)
	if _, err := env.Client().ImageService().Get(ctx, ref); err == nil {
		t.Fatal("image still there after images rm")
	}

	const unused = "podhost.test/unused:prune"
	unusedImage(t, unused)
	t.Cleanup(func() { _ = env.Client().ImageService().Delete(ctx, unused) })
	d.writeManifest("ref.yaml", podManifest("ref", `  containers:
  - name: main
    image: `+testenv.ImageRef+`
    command: ["sleep", "3600"]
`))
	out = d.mustCLI(append([]string{"images", "prune"}, ctrFlags...)...)
	if !strings.Contains(out, "removed "+unused) {
		t.Errorf("images prune output:\n%s", out)
	}
	if _, err := env.Client().ImageService().Get(ctx, unused); err == nil {
		t.Error("unreferenced image still there after images prune")
	}
	if _, err := env.Client().ImageService().Get(ctx, testenv.ImageRef); err != nil {
		t.Errorf("image a manifest references removed by prune: %v", err)
	}
}
