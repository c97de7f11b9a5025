//go:build integration

package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/mount"
	"github.com/containerd/containerd/v2/pkg/oci"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/host/cgroups"
	"github.com/podhost/podhost/internal/host/fsquota"
	"github.com/podhost/podhost/internal/host/runtime"
	"github.com/podhost/podhost/internal/host/state"
	"github.com/podhost/podhost/internal/kubelet/eviction"
	"github.com/podhost/podhost/internal/logs"
	"github.com/podhost/podhost/internal/model/podstate"
)

// evictionBenchN is how many pods the eviction bench measures.
const evictionBenchN = 100

type evictionBenchNode struct {
	pods    []*corev1.Pod
	running map[types.UID]*podstate.Pod
}

func (p *evictionBenchNode) ActivePods() []*corev1.Pod { return p.pods }
func (p *evictionBenchNode) Evict(pod *corev1.Pod, _ int64, msg string) {
	panic("evicted " + pod.Name + ": " + msg)
}
func (p *evictionBenchNode) GetNewerThan(_ context.Context, uid types.UID, _ time.Time) (*podstate.Pod, error) {
	return p.running[uid], nil
}
func (p *evictionBenchNode) PodsStats() (cgroups.Stats, error) { return cgroups.Stats{}, nil }
func (p *evictionBenchNode) PodStats(types.UID, corev1.PodQOSClass) (cgroups.Stats, error) {
	return cgroups.Stats{}, nil
}
func (p *evictionBenchNode) ContainerStats(types.UID, corev1.PodQOSClass, string) (cgroups.Stats, error) {
	return cgroups.Stats{}, nil
}

// BenchmarkEvictionMeasure: one look of the eviction manager
// (Manager.Synchronize) over 100 pods that each have an ephemeral-storage
// limit and a disk emptyDir, as a daemon makes it every
// evictionMonitoringPeriod: node signals, then per pod the writable layer
// through the real containerd (container Get + snapshot Usage of an
// overlay upper dir holding 1 MiB in 21 files), the log dir (one 64 KiB
// file) and the emptyDir (10 files). Two rows, same run: walk (every
// emptyDir walked, on the test dir's filesystem) and quota (the emptyDirs
// on a loop-mounted ext4 with project quotas, each with its project ID,
// read with one quotactl: skipped, saying why, where the kernel lacks
// quota support). Reported: the CPU of podhost's side and of containerd
// per look, and what that is in % of one core at the default 10 s period.
// Run: BENCH=BenchmarkEvictionMeasure make bench.
func BenchmarkEvictionMeasure(b *testing.B) {
	importTestImage(b)
	ctx := env.Context(context.Background())
	rt, err := runtime.Connect(ctx, env.Address, env.Namespace, runtime.Options{Snapshotter: env.Snapshotter})
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	dir := b.TempDir()
	bp := &evictionBenchNode{running: map[types.UID]*podstate.Pod{}}
	for i := range evictionBenchN {
		bp.pods = append(bp.pods, benchEvictionPod(b, ctx, dir, i, bp.running))
	}
	// The memory threshold only: the shared machine's disk may be past
	// the kubelet's 85 % (imagefs), and a look under pressure evicts; the
	// pods have limits, so each is measured every look anyway.
	ts, err := eviction.Parse(map[string]string{"memory.available": "100Mi"}, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	opts := eviction.Options{Thresholds: ts, NodeFsPath: dir, ImageFsPath: env.Root,
		LogDir: filepath.Join(dir, "logs"), VolumeDir: func(uid types.UID, v string) string { return filepath.Join(dir, "vol", string(uid), v) }}
	b.Run("walk", func(b *testing.B) { benchLooks(b, ctx, eviction.New(bp, bp, bp, bp, rt, opts)) })
	mnt, skip := tryPrjquotaMount(b, "512M")
	if skip == "" {
		opts.VolumeDir, opts.Quotas = benchQuotaVolumes(b, dir, mnt, bp.pods)
	}
	b.Run("quota", func(b *testing.B) {
		if skip != "" {
			fmt.Printf("%s: skipped: %s\n", b.Name(), skip) // a skipped benchmark prints nothing without -v
			b.Skip(skip)
		}
		benchLooks(b, ctx, eviction.New(bp, bp, bp, bp, rt, opts))
	})
}

// benchLooks times b.N looks of m and reports their CPU.
func benchLooks(b *testing.B, ctx context.Context, m *eviction.Manager) {
	ctrd := env.ContainerdPID()
	self := os.Getpid()
	m.Synchronize(ctx) // warm: connections, caches
	b.ResetTimer()
	s0, c0, t0 := cpuTicks(self), cpuTicks(ctrd), time.Now()
	for range b.N {
		if ev := m.Synchronize(ctx); len(ev) != 0 {
			b.Fatalf("evicted %d pods", len(ev))
		}
	}
	el := time.Since(t0)
	b.StopTimer()
	selfMs := float64(cpuTicks(self)-s0) * 10 / float64(b.N)
	ctrdMs := float64(cpuTicks(ctrd)-c0) * 10 / float64(b.N)
	b.ReportMetric(selfMs, "podhost-cpu-ms/look")
	b.ReportMetric(ctrdMs, "containerd-cpu-ms/look")
	b.ReportMetric((selfMs+ctrdMs)/10000*100, "%core@10s")
	b.Logf("%d pods: %.1f ms wall, podhost %.1f ms + containerd %.1f ms CPU per look: %.3f %% of a core at a 10 s period",
		evictionBenchN, float64(el.Milliseconds())/float64(b.N), selfMs, ctrdMs, (selfMs+ctrdMs)/100)
}

// benchQuotaVolumes makes each pod's emptyDir again on the project quota
// mount mnt, as the volume manager does for a pod with hostUsers: false
// (project ID assigned before the files are written, recorded in a state
// db under dir), and returns where they are and their quotas.
func benchQuotaVolumes(b *testing.B, dir, mnt string, pods []*corev1.Pod) (func(types.UID, string) string, eviction.Quotas) {
	db, err := state.Open(filepath.Join(dir, "quota-state.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = db.Close() })
	q, err := fsquota.New(db, fsquota.Options{})
	if err != nil {
		b.Fatal(err)
	}
	volDir := func(uid types.UID, v string) string { return filepath.Join(mnt, "vol", string(uid), v) }
	no := false
	for _, p := range pods {
		p.Spec.HostUsers = &no
		vd := volDir(p.UID, "scratch")
		if err := os.MkdirAll(vd, 0o777); err != nil {
			b.Fatal(err)
		}
		if m := q.Assign(p, "scratch", vd); m != fsquota.MethodQuota {
			b.Fatalf("%s: emptyDir measured by %s, want project quota", p.Name, m)
		}
		writeFiles(b, vd, 10, 4096)
	}
	return volDir, q
}

// benchEvictionPod makes pod i: a container with a snapshot holding 1 MiB
// in 21 files, its log file, an emptyDir with 10 files.
func benchEvictionPod(b *testing.B, ctx context.Context, dir string, i int, running map[types.UID]*podstate.Pod) *corev1.Pod {
	b.Helper()
	c := env.Client()
	img, err := c.GetImage(ctx, env.ImageRef)
	if err != nil {
		b.Fatal(err)
	}
	id := fmt.Sprintf("evbench-%d-%d", os.Getpid(), i)
	ctr, err := c.NewContainer(ctx, id, client.WithImage(img), client.WithSnapshotter(env.Snapshotter),
		client.WithNewSnapshot(id, img), client.WithNewSpec(oci.WithImageConfig(img)))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = ctr.Delete(context.WithoutCancel(ctx), client.WithSnapshotCleanup) })
	mounts, err := c.SnapshotService(env.Snapshotter).Mounts(ctx, id)
	if err != nil {
		b.Fatal(err)
	}
	target := filepath.Join(dir, "mnt")
	if err := os.MkdirAll(target, 0o755); err != nil {
		b.Fatal(err)
	}
	if err := mount.All(mounts, target); err != nil {
		b.Fatal(err)
	}
	writeFiles(b, filepath.Join(target, "data"), 20, 1024)
	writeFiles(b, filepath.Join(target, "big"), 1, 1<<20-20*1024)
	if err := mount.UnmountAll(target, 0); err != nil {
		b.Fatal(err)
	}
	uid := types.UID(fmt.Sprintf("evbench-uid-%d", i))
	p := &corev1.Pod{}
	p.Name, p.Namespace, p.UID = fmt.Sprintf("evbench-%d", i), "default", uid
	limit := resource.MustParse("1Gi")
	p.Spec.Containers = []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceEphemeralStorage: limit}}}}
	p.Spec.Volumes = []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: &limit}}}}
	writeFiles(b, filepath.Join(logs.ContainerDir(filepath.Join(dir, "logs"), p.Namespace, p.Name, string(uid), "app")), 1, 64<<10)
	writeFiles(b, filepath.Join(dir, "vol", string(uid), "scratch"), 10, 4096)
	running[uid] = &podstate.Pod{UID: uid, Containers: []*podstate.Container{{ID: id, Name: "app", State: podstate.StateRunning}}}
	return p
}

func writeFiles(b *testing.B, dir string, n, size int) {
	b.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	for i := range n {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%d.log", i)), []byte(strings.Repeat("x", size)), 0o644); err != nil {
			b.Fatal(err)
		}
	}
}
