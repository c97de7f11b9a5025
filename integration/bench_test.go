//go:build integration

package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/containerd/containerd/v2/pkg/netns"
	"github.com/containerd/containerd/v2/pkg/oci"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/podhost/podhost/internal/host/network"
)

const benchPods = 30

// floorPod is one "pod" made the cheapest way podhost could: a netns, CNI
// ADD, one container and its task, straight through the containerd client.
type floorPod struct {
	id    string
	ns    *netns.NetNS
	ctr   containerd.Container
	task  containerd.Task
	netID string
}

// startFloorPod creates and starts one floor pod.
func startFloorPod(ctx context.Context, net *network.Manager, img containerd.Image, nsDir, id string) (*floorPod, error) {
	fp := &floorPod{id: id, netID: "floor-" + id}
	var err error
	if fp.ns, err = netns.NewNetNS(nsDir); err != nil {
		return fp, err
	}
	if _, err = net.Setup(ctx, fp.netID, fp.ns.GetPath(), nil); err != nil {
		return fp, err
	}
	c := env.Client()
	fp.ctr, err = c.NewContainer(ctx, id,
		containerd.WithImage(img),
		containerd.WithNewSnapshot(id, img),
		containerd.WithNewSpec(oci.WithImageConfig(img), oci.WithProcessArgs("sleep", "3600"),
			oci.WithLinuxNamespace(specs.LinuxNamespace{Type: specs.NetworkNamespace, Path: fp.ns.GetPath()}),
			oci.WithCgroup(env.CgroupPrefix+"/floor/"+id)))
	if err != nil {
		return fp, err
	}
	if fp.task, err = fp.ctr.NewTask(ctx, cio.NullIO); err != nil {
		return fp, err
	}
	return fp, fp.task.Start(ctx)
}

func (fp *floorPod) remove(ctx context.Context, net *network.Manager) {
	if fp.task != nil {
		_, _ = fp.task.Delete(ctx, containerd.WithProcessKill)
	}
	if fp.ctr != nil {
		_ = fp.ctr.Delete(ctx, containerd.WithSnapshotCleanup)
	}
	if fp.ns != nil {
		_ = net.Teardown(ctx, fp.netID, fp.ns.GetPath(), nil)
		_ = fp.ns.Remove()
	}
}

// measureFloor starts n floor pods in parallel and returns the wall time
// until all run, then removes them.
func measureFloor(b *testing.B, n int) time.Duration {
	start, _ := measureFloorBoth(b, n)
	return start
}

// measureFloorBoth starts n floor pods in parallel, then removes them in
// parallel, and returns both wall times.
func measureFloorBoth(b *testing.B, n int) (start, remove time.Duration) {
	start, remove, _ = measureFloorCPU(b, n)
	return start, remove
}

// measureFloorCPU is measureFloorBoth that also returns the CPU the start
// used.
func measureFloorCPU(b *testing.B, n int) (start, remove time.Duration, cpu coldCPU) {
	importTestImage(b)
	ctx := env.Context(context.Background())
	net, err := network.New(network.Config{ConfDir: env.CNIConfDir, BinDirs: env.CNIBinDirs, CacheDir: env.CNICacheDir})
	if err != nil {
		b.Fatal(err)
	}
	img, err := env.Client().GetImage(ctx, env.ImageRef)
	if err != nil {
		b.Fatal(err)
	}
	nsDir := filepath.Join(env.RunDir, "floor-netns")
	pods := make([]*floorPod, n)
	errs := make([]error, n)
	t0, cpu0 := time.Now(), sampleCPU(os.Getpid())
	var wg sync.WaitGroup
	for i := range pods {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			pods[i], errs[i] = startFloorPod(ctx, net, img, nsDir, fmt.Sprintf("floor-%d-%d", os.Getpid(), i))
		}(i)
	}
	wg.Wait()
	start, cpu = time.Since(t0), sampleCPU(os.Getpid()).since(cpu0)
	t0 = time.Now()
	for _, p := range pods {
		wg.Add(1)
		go func() { defer wg.Done(); p.remove(ctx, net) }()
	}
	wg.Wait()
	remove = time.Since(t0)
	for i := range pods {
		if errs[i] != nil {
			b.Fatalf("floor pod %d: %v", i, errs[i])
		}
	}
	return start, remove, cpu
}

// BenchmarkColdStart30 reports podhost's cold start (daemon start with 30
// manifests present → all 30 pods Running) as a ratio to the floor: the same
// 30 containers, netns and CNI ADDs made directly through the containerd
// client, in parallel, in the same run. Target: ≤ 1.2x.
func BenchmarkColdStart30(b *testing.B) {
	for i := 0; i < b.N; i++ {
		floor := measureFloor(b, benchPods)
		d := newPodhostd(b)
		for j := 0; j < benchPods; j++ {
			d.writeManifest(fmt.Sprintf("b%d.yaml", j), sleeper(fmt.Sprintf("b%d", j), 0, ""))
		}
		start := time.Now()
		d.startNoWait()
		d.waitAllRunningWatched(benchPods, 3*time.Minute)
		cold := time.Since(start)
		b.ReportMetric(floor.Seconds(), "floor-s")
		b.ReportMetric(cold.Seconds(), "podhost-s")
		b.ReportMetric(cold.Seconds()/floor.Seconds(), "x-floor")
		if f := os.Getenv("BENCH_LOG"); f != "" { // the daemon's log, for profiling
			_ = os.WriteFile(f, d.out.Bytes(), 0o644)
		}
		d.teardown()
	}
}

// BenchmarkManifestToRunning reports the latency from a manifest appearing
// in the directory to its pod Running, against the floor for one pod.
func BenchmarkManifestToRunning(b *testing.B) {
	for i := 0; i < b.N; i++ {
		var floors, lats []time.Duration
		for k := 0; k < 5; k++ {
			floors = append(floors, measureFloor(b, 1))
		}
		d := newPodhostd(b)
		d.start()
		for k := 0; k < 5; k++ {
			name := fmt.Sprintf("lat%d", k)
			start := time.Now()
			d.writeManifest(name+".yaml", sleeper(name, 0, ""))
			d.waitRunning(name)
			lats = append(lats, time.Since(start))
		}
		f, l := median(floors), median(lats)
		b.ReportMetric(f.Seconds()*1000, "floor-ms")
		b.ReportMetric(l.Seconds()*1000, "podhost-ms")
		b.ReportMetric(l.Seconds()/f.Seconds(), "x-floor")
		if f := os.Getenv("BENCH_LOG"); f != "" {
			_ = os.WriteFile(f+".latency", d.out.Bytes(), 0o644)
		}
		d.teardown()
	}
}

// median returns the median of ds, which it leaves in order.
func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
