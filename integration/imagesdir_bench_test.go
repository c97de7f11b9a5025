//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/core/images"
	"github.com/containerd/errdefs"

	"github.com/podhost/podhost/internal/host/network"
	"github.com/podhost/podhost/internal/testenv"
)

// imagesDirBootImages is how many preloaded images (and pods) a boot has.
const imagesDirBootImages = 10

// imagesDirBootReport is make bench's images-dir table
// (_output/bench/imagesdir.{json,txt}).
type imagesDirBootReport struct {
	Images       int   `json:"images"`
	ArchiveBytes int64 `json:"archiveBytes"` // all archives together
	// Each run, in order; cold: the images not in containerd yet; warm:
	// imported by an earlier boot.
	ColdPodhostRunsS []float64 `json:"coldPodhostRunsS"`
	ColdFloorRunsS   []float64 `json:"coldFloorRunsS"`
	WarmPodhostRunsS []float64 `json:"warmPodhostRunsS"`
	WarmFloorRunsS   []float64 `json:"warmFloorRunsS"`
	// The images dir's own pass of each warm boot (its log's took=).
	WarmReadRunsS []float64 `json:"warmImagesDirReadRunsS"`
	ColdRatio     float64   `json:"coldPairedRatio"` // median of podhost run i / floor run i
	WarmRatio     float64   `json:"warmPairedRatio"`
}

// BenchmarkImagesDirBoot (make bench, issue 34): a boot with 10 images
// preloaded in the images dir (OCI archives of 5 MiB, each its own image)
// and one pod per image, until all 10 pods run (the API's watch): cold,
// the images not in containerd yet, and warm, imported by the boot
// before (a new podhost, as after a reboot: no pod running). The floor,
// same run, alternating: `ctr images import` of the same archives one
// after the other (as k3s does at each boot), then the 10 pods started in
// parallel straight through the containerd client (netns, CNI ADD,
// container, task). Writes BENCH_OUT.imagesdir.{json,txt} when set.
func BenchmarkImagesDirBoot(b *testing.B) {
	runs := 3
	dir := filepath.Join(b.TempDir(), "images")
	if err := os.Mkdir(dir, 0o700); err != nil {
		b.Fatal(err)
	}
	refs := make([]string, imagesDirBootImages)
	rep := imagesDirBootReport{Images: imagesDirBootImages}
	for i := range refs {
		refs[i] = fmt.Sprintf("podhost.test/bench-imagesdir/app%d:1", i)
		path := filepath.Join(dir, fmt.Sprintf("app%d.tar", i))
		if err := testenv.BuildAppImage(path, testenv.AppImage{Ref: refs[i], Payload: 4 << 20, Seed: uint64(i + 1)}); err != nil {
			b.Fatal(err)
		}
		rep.ArchiveBytes += fileSize(path)
	}
	b.Cleanup(func() { removeImages(b, refs) })
	for i := 0; i < b.N; i++ {
		for range runs {
			removeImages(b, refs)
			rep.ColdFloorRunsS = append(rep.ColdFloorRunsS, ctrImportFloor(b, dir, refs).Seconds())
			removeImages(b, refs)
			cold, _ := imagesDirBoot(b, dir, refs, false)
			rep.ColdPodhostRunsS = append(rep.ColdPodhostRunsS, cold.Seconds())
			warm, read := imagesDirBoot(b, dir, refs, true)
			rep.WarmPodhostRunsS = append(rep.WarmPodhostRunsS, warm.Seconds())
			rep.WarmReadRunsS = append(rep.WarmReadRunsS, read.Seconds())
			rep.WarmFloorRunsS = append(rep.WarmFloorRunsS, ctrImportFloor(b, dir, refs).Seconds())
		}
		rep.ColdRatio = pairedRatio(rep.ColdPodhostRunsS, rep.ColdFloorRunsS)
		rep.WarmRatio = pairedRatio(rep.WarmPodhostRunsS, rep.WarmFloorRunsS)
		writeImagesDirBoot(b, rep)
	}
}

var imagesDirRead = regexp.MustCompile(`images dir read.* imported=(\d+) skipped=(\d+) failed=0 took=(\S+)`)

// imagesDirBoot starts a podhost with dir as its images dir and one pod
// per image, returns the wall time from exec until all run and the
// images dir's pass (its log line), and tears it down. warm: every
// archive must have been skipped, cold: imported.
func imagesDirBoot(b *testing.B, dir string, refs []string, warm bool) (time.Duration, time.Duration) {
	d := newPodhostd(b)
	appendConfig(b, d, "imagesDir: "+dir+"\n")
	for i, ref := range refs {
		d.writeManifest(fmt.Sprintf("app%d.yaml", i), podWithImage(fmt.Sprintf("app%d", i), ref))
	}
	start := time.Now()
	d.startNoWait()
	d.waitAllRunningWatched(len(refs), 5*time.Minute)
	took := time.Since(start)
	m := imagesDirRead.FindStringSubmatch(d.logs())
	want := [2]string{fmt.Sprint(len(refs)), "0"}
	if warm {
		want = [2]string{"0", fmt.Sprint(len(refs))}
	}
	if m == nil || m[1] != want[0] || m[2] != want[1] {
		b.Fatalf("images dir pass: %v, want imported=%s skipped=%s\n%s", m, want[0], want[1], d.logs())
	}
	read, err := time.ParseDuration(m[3])
	if err != nil {
		b.Fatal(err)
	}
	d.teardown()
	return took, read
}

// ctrImportFloor imports every archive of dir with `ctr images import`,
// one after the other, then starts one floor pod per image in parallel;
// it returns the wall time of both and removes the pods.
func ctrImportFloor(b *testing.B, dir string, refs []string) time.Duration {
	ctx := env.Context(context.Background())
	net, err := network.New(network.Config{ConfDir: env.CNIConfDir, BinDirs: env.CNIBinDirs, CacheDir: env.CNICacheDir})
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	for i := range refs {
		out, err := exec.Command(filepath.Join(env.BinDir, "ctr"), "--address", env.Address, "--namespace", env.Namespace,
			"images", "import", "--snapshotter", env.Snapshotter, filepath.Join(dir, fmt.Sprintf("app%d.tar", i))).CombinedOutput()
		if err != nil {
			b.Fatalf("ctr images import: %v\n%s", err, out)
		}
	}
	pods := make([]*floorPod, len(refs))
	errs := make([]error, len(refs))
	var wg sync.WaitGroup
	for i, ref := range refs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			img, err := env.Client().GetImage(ctx, ref)
			if err != nil {
				errs[i] = err
				return
			}
			pods[i], errs[i] = startFloorPod(ctx, net, img, filepath.Join(env.RunDir, "floor-netns"), fmt.Sprintf("floor-img-%d-%d", os.Getpid(), i))
		}()
	}
	wg.Wait()
	took := time.Since(start)
	for _, p := range pods {
		if p != nil {
			p.remove(ctx, net)
		}
	}
	if err := errors.Join(errs...); err != nil {
		b.Fatalf("floor pods: %v", err)
	}
	return took
}

// removeImages deletes refs from the namespace, their content and
// snapshots with them (synchronous garbage collection).
func removeImages(tb testing.TB, refs []string) {
	ctx := env.Context(context.Background())
	for _, ref := range refs {
		err := env.Client().ImageService().Delete(ctx, ref, images.SynchronousDelete())
		if err != nil && !errors.Is(err, errdefs.ErrNotFound) {
			tb.Fatalf("delete image %s: %v", ref, err)
		}
	}
}

func writeImagesDirBoot(b *testing.B, rep imagesDirBootReport) {
	var t strings.Builder
	med := func(s []float64) float64 { return medianF(s) }
	fmt.Fprintf(&t, "images dir boot: %d images (%.1f MiB of OCI archives), %d pods, until all Running\n", rep.Images, float64(rep.ArchiveBytes)/(1<<20), rep.Images)
	fmt.Fprintf(&t, "%-6s %10s %10s %6s\n", "", "podhost(s)", "floor(s)", "ratio")
	fmt.Fprintf(&t, "%-6s %10.2f %10.2f %6.2f\n", "cold", med(rep.ColdPodhostRunsS), med(rep.ColdFloorRunsS), rep.ColdRatio)
	fmt.Fprintf(&t, "%-6s %10.2f %10.2f %6.2f\n", "warm", med(rep.WarmPodhostRunsS), med(rep.WarmFloorRunsS), rep.WarmRatio)
	fmt.Fprintf(&t, "runs (s), in order: cold podhost %s, floor %s; warm podhost %s, floor %s; warm images dir pass %s\n",
		runList(rep.ColdPodhostRunsS, "%.2f"), runList(rep.ColdFloorRunsS, "%.2f"), runList(rep.WarmPodhostRunsS, "%.2f"),
		runList(rep.WarmFloorRunsS, "%.2f"), runList(rep.WarmReadRunsS, "%.3f"))
	fmt.Fprintf(&t, "floor: ctr images import of the same archives one after the other, then the pods through the containerd client in parallel; cold: images not in containerd; warm: imported before; ratio: median of podhost run i / floor run i\n")
	b.Log("\n" + t.String())
	if out := os.Getenv("BENCH_OUT"); out != "" {
		js, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(out+".imagesdir.json", js, 0o644); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(out+".imagesdir.txt", []byte(t.String()), 0o644); err != nil {
			b.Fatal(err)
		}
	}
}

func medianF(s []float64) float64 {
	if len(s) == 0 {
		return 0
	}
	c := append([]float64(nil), s...)
	slices.Sort(c)
	return c[len(c)/2]
}
