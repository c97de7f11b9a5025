package eviction

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/host/cgroups"
	"github.com/podhost/podhost/internal/logs"
	"github.com/podhost/podhost/internal/model/podstate"
)

type fakeNode struct {
	pods      []*corev1.Pod
	evicted   []string
	podMem    map[types.UID]uint64
	parentMem uint64
	layers    map[string]int64 // container ID → bytes
}

func (f *fakeNode) ActivePods() []*corev1.Pod { return f.pods }
func (f *fakeNode) Evict(pod *corev1.Pod, grace int64, message string) {
	f.evicted = append(f.evicted, pod.Name+": "+message)
}
func (f *fakeNode) PodsStats() (cgroups.Stats, error) {
	return cgroups.Stats{MemoryWorkingSet: f.parentMem}, nil
}
func (f *fakeNode) PodStats(uid types.UID, _ corev1.PodQOSClass) (cgroups.Stats, error) {
	return cgroups.Stats{MemoryWorkingSet: f.podMem[uid]}, nil
}
func (f *fakeNode) ContainerStats(uid types.UID, _ corev1.PodQOSClass, _ string) (cgroups.Stats, error) {
	return cgroups.Stats{MemoryWorkingSet: f.podMem[uid]}, nil
}
func (f *fakeNode) GetNewerThan(_ context.Context, uid types.UID, _ time.Time) (*podstate.Pod, error) {
	return &podstate.Pod{UID: uid, Containers: []*podstate.Container{{ID: string(uid) + "-c", Name: "c", State: podstate.StateRunning}}}, nil
}
func (f *fakeNode) SnapshotUsage(_ context.Context, id string) (int64, int64, error) {
	return f.layers[id], 1, nil
}

func newTestManager(t *testing.T, f *fakeNode, hard map[string]string, fs FsStats) (*Manager, string) {
	t.Helper()
	dir := t.TempDir()
	meminfo := filepath.Join(dir, "meminfo")
	if err := os.WriteFile(meminfo, []byte("MemTotal:       4096000 kB\nMemFree:         1000000 kB\nInactive(file):   24000 kB\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ts, err := Parse(hard, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := New(f, f, f, f, f, Options{Thresholds: ts, PressureTransitionPeriod: time.Minute, MemInfo: meminfo,
		NodeFsPath: "/node", ImageFsPath: "/image", AllocatableMemory: 1000 * mi, LogDir: filepath.Join(dir, "logs"),
		VolumeDir: func(uid types.UID, v string) string { return filepath.Join(dir, "vol", string(uid), v) },
		Statfs:    func(string) (FsStats, error) { return fs, nil }, Logger: slog.New(slog.DiscardHandler)})
	return m, dir
}

func writeFile(t *testing.T, path string, n int) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(strings.Repeat("x", n)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Local storage: the writable layer plus the logs over the container's
// limit evicts the pod, once; an emptyDir over its sizeLimit evicts its pod.
func TestManagerLocalStorage(t *testing.T) {
	f := &fakeNode{layers: map[string]int64{}}
	a, b, c := pod("a", withLimit("2Mi")), pod("b", withEmptyDir("scratch", "1Mi", "")), pod("c")
	f.pods = []*corev1.Pod{a, b, c}
	m, dir := newTestManager(t, f, map[string]string{}, FsStats{Capacity: 100, Available: 50, Inodes: 10, InodesFree: 5, Dev: 1})
	if got := m.Synchronize(context.Background()); len(got) != 0 {
		t.Fatalf("evicted with nothing used: %+v", got)
	}
	f.layers["uid-a-c"] = 1 * mi
	writeFile(t, filepath.Join(logs.ContainerDir(filepath.Join(dir, "logs"), "default", "a", "uid-a", "c"), "0.log"), 1*mi+4096)
	writeFile(t, filepath.Join(dir, "vol", "uid-b", "scratch", "big"), 2*mi)
	f.layers["uid-c-c"] = 100 * mi // no limit: nothing to enforce
	m.Synchronize(context.Background())
	want := []string{`a: Pod ephemeral local storage usage exceeds the total limit of containers 2Mi. `,
		`b: Usage of EmptyDir volume "scratch" exceeds the limit "1Mi". `}
	if strings.Join(f.evicted, "|") != strings.Join(want, "|") {
		t.Fatalf("evicted %q, want %q", f.evicted, want)
	}
	m.Synchronize(context.Background())
	if len(f.evicted) != 2 {
		t.Fatalf("evicted again: %q", f.evicted)
	}
}

// fakeQuotas is the project quota of some emptyDirs.
type fakeQuotas map[string]int64 // "<uid>/<volume>" → bytes

func (q fakeQuotas) Usage(uid types.UID, volume string) (int64, int64, bool, error) {
	b, ok := q[string(uid)+"/"+volume]
	return b, 1, ok, nil
}

// An emptyDir with a project quota is measured by it (the files on the
// disk do not count); one without is walked.
func TestManagerQuotaUsage(t *testing.T) {
	f := &fakeNode{layers: map[string]int64{}}
	q, w := pod("q", withEmptyDir("scratch", "1Mi", "")), pod("w", withEmptyDir("scratch", "1Mi", ""))
	f.pods = []*corev1.Pod{q, w}
	m, dir := newTestManager(t, f, map[string]string{}, FsStats{Capacity: 100, Available: 50, Inodes: 10, InodesFree: 5, Dev: 1})
	quotas := fakeQuotas{"uid-q/scratch": 0}
	m.opts.Quotas = quotas
	writeFile(t, filepath.Join(dir, "vol", "uid-q", "scratch", "big"), 2*mi) // not what its quota says
	writeFile(t, filepath.Join(dir, "vol", "uid-w", "scratch", "big"), 2*mi)
	m.Synchronize(context.Background())
	if len(f.evicted) != 1 || !strings.HasPrefix(f.evicted[0], "w: ") {
		t.Fatalf("evicted %q; want w only (walked)", f.evicted)
	}
	quotas["uid-q/scratch"] = 3 * mi
	m.Synchronize(context.Background())
	if len(f.evicted) != 2 || f.evicted[1] != `q: Usage of EmptyDir volume "scratch" exceeds the limit "1Mi". ` {
		t.Fatalf("evicted %q; want q by its quota", f.evicted)
	}
}

// allocatableMemory.available: node allocatable less the pods' working
// set; the lowest priority pod over its request goes, a critical one
// stays, and MemoryPressure shows.
func TestManagerMemoryPressure(t *testing.T) {
	f := &fakeNode{parentMem: 950 * mi}
	crit, low, high := pod("crit", withClass("system-node-critical")), pod("low", withPriority(1)), pod("high", withPriority(100))
	f.pods = []*corev1.Pod{crit, low, high}
	f.podMem = map[types.UID]uint64{crit.UID: 700 * mi, low.UID: 50 * mi, high.UID: 200 * mi}
	m, _ := newTestManager(t, f, map[string]string{"memory.available": "100Mi"}, FsStats{Capacity: 100, Available: 50, Dev: 1})
	if c := m.Conditions(); c[0].Status != corev1.ConditionFalse || c[0].Reason != "KubeletHasSufficientMemory" {
		t.Fatalf("conditions before %+v", c)
	}
	m.Synchronize(context.Background())
	if len(f.evicted) != 1 || !strings.HasPrefix(f.evicted[0], "low: The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. Container c was using 50Mi, request is 0, has larger consumption of memory. ") {
		t.Fatalf("evicted %q", f.evicted)
	}
	c := m.Conditions()
	if c[0].Type != corev1.NodeMemoryPressure || c[0].Status != corev1.ConditionTrue || c[0].Reason != "KubeletHasInsufficientMemory" ||
		c[1].Type != corev1.NodeDiskPressure || c[1].Status != corev1.ConditionFalse {
		t.Fatalf("conditions %+v", c)
	}
}

func TestDiskUsage(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a", "one"), 8192)
	if err := os.Link(filepath.Join(dir, "a", "one"), filepath.Join(dir, "a", "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc", filepath.Join(dir, "sym")); err != nil {
		t.Fatal(err)
	}
	d, err := DiskUsage(dir)
	if err != nil {
		t.Fatal(err)
	}
	// dir, a, one (once), sym; the link is the same inode.
	if d.Inodes != 4 || d.Bytes < 8192 || d.Bytes > 64<<10 {
		t.Fatalf("usage %+v", d)
	}
	if d, err := DiskUsage(filepath.Join(dir, "missing")); err != nil || d.Bytes != 0 {
		t.Fatalf("missing dir: %+v, %v", d, err)
	}
}

// Disk pressure: unused images go first (the node-level reclaim); a pod is
// evicted only if that did not relieve it.
func TestManagerDiskPressureReclaimsImagesFirst(t *testing.T) {
	f := &fakeNode{layers: map[string]int64{"uid-a-c": 5 * mi}}
	f.pods = []*corev1.Pod{pod("a")}
	m, _ := newTestManager(t, f, map[string]string{"nodefs.available": "10%"}, FsStats{})
	fs := FsStats{Capacity: 100 * mi, Available: 5 * mi, Inodes: 10, InodesFree: 5, Dev: 1}
	m.opts.Statfs = func(string) (FsStats, error) { return fs, nil }
	reclaims := 0
	m.opts.ReclaimImages = func(context.Context) error { reclaims++; fs.Available = 50 * mi; return nil }
	if got := m.Synchronize(context.Background()); got != nil || reclaims != 1 || len(f.evicted) != 0 {
		t.Fatalf("evictions %+v, reclaims %d, evicted %q: want the images reclaimed, no pod evicted", got, reclaims, f.evicted)
	}
	if c := m.Conditions(); c[1].Type != corev1.NodeDiskPressure || c[1].Status != corev1.ConditionTrue {
		t.Fatalf("DiskPressure %+v, want True (the threshold was met)", c[1])
	}
	fs.Available = 5 * mi
	m.opts.ReclaimImages = func(context.Context) error { reclaims++; return nil } // nothing left to remove
	m.Synchronize(context.Background())
	if reclaims != 2 || len(f.evicted) != 1 || !strings.HasPrefix(f.evicted[0], "a: The node was low on resource: ephemeral-storage. Threshold quantity: 10Mi, available: 5Mi. ") {
		t.Fatalf("reclaims %d, evicted %q", reclaims, f.evicted)
	}
}

// TestDiskUsageDeepTree: a container nesting directories until their paths
// pass PATH_MAX (lstat: ENAMETOOLONG) does not hide what it writes at the
// bottom.
func TestDiskUsageDeepTree(t *testing.T) {
	dir := t.TempDir()
	fd, err := unix.Open(dir, unix.O_DIRECTORY|unix.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 1500; i++ { // "abcd/" × 1500: 7500 bytes of path
		if err := unix.Mkdirat(fd, "abcd", 0o755); err != nil {
			t.Fatal(err)
		}
		next, err := unix.Openat(fd, "abcd", unix.O_DIRECTORY|unix.O_RDONLY, 0)
		unix.Close(fd)
		if err != nil {
			t.Fatal(err)
		}
		fd = next
	}
	f, err := unix.Openat(fd, "big", unix.O_CREAT|unix.O_WRONLY, 0o644)
	unix.Close(fd)
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 4<<20)
	for i := range data {
		data[i] = 1 // not a hole
	}
	if _, err := unix.Write(f, data); err != nil {
		t.Fatal(err)
	}
	unix.Close(f)
	d, err := DiskUsage(dir)
	if err != nil {
		t.Fatal(err)
	}
	if d.Bytes < 4<<20 || d.Inodes < 1500 {
		t.Fatalf("usage %+v: the bottom of the tree was not measured", d)
	}
}
