package cgroups

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// fakeV2 is a plain dir that looks like the root of a cgroup2 mount.
func fakeV2(t *testing.T, controllers string) (*Manager, string) {
	t.Helper()
	root := t.TempDir()
	mustWrite(t, filepath.Join(root, "cgroup.controllers"), controllers+"\n")
	mustWrite(t, filepath.Join(root, "cgroup.subtree_control"), "")
	m, err := New(context.Background(), Options{
		Driver: DriverAuto, Root: root, Logger: testLogger(t),
		detectMode: func(string) string { return ModeUnified },
		systemdUp:  func() bool { return false },
	})
	if err != nil {
		t.Fatal(err)
	}
	if m.Mode() != ModeUnified || m.Driver() != DriverCgroupfs {
		t.Fatalf("mode/driver = %s/%s", m.Mode(), m.Driver())
	}
	return m, root
}

func TestV2Burstable(t *testing.T) {
	ctx := context.Background()
	m, root := fakeV2(t, "cpuset cpu io memory pids")
	r := Resources{CPUShares: 512, CPUQuota: 50000, CPUPeriod: 100000, MemoryLimit: 64 << 20, PidsLimit: 100}
	pc, err := m.EnsurePod(ctx, uid, corev1.PodQOSBurstable, r)
	if err != nil {
		t.Fatal(err)
	}
	want := PodCgroup{Driver: DriverCgroupfs, Name: "/podhost/burstable/pod" + string(uid), UID: uid, QOS: corev1.PodQOSBurstable}
	if pc != want {
		t.Fatalf("pc = %+v, want %+v", pc, want)
	}
	pod := filepath.Join(root, pc.Name)
	assertFile(t, filepath.Join(pod, "memory.max"), "67108864")
	assertFile(t, filepath.Join(pod, "cpu.max"), "50000 100000")
	assertFile(t, filepath.Join(pod, "cpu.weight"), "20")
	assertFile(t, filepath.Join(pod, "pids.max"), "100")
	for _, dir := range []string{root, filepath.Join(root, "podhost"), filepath.Join(root, "podhost/burstable")} {
		assertFile(t, filepath.Join(dir, "cgroup.subtree_control"), "+cpuset +cpu +io +memory +pids")
	}
	assertMissing(t, filepath.Join(pod, "cgroup.subtree_control"))
	if got := m.ContainerPath(pc, "c1"); got != pc.Name+"/c1" {
		t.Errorf("ContainerPath = %q", got)
	}
}

func TestV2UnlimitedAndBestEffort(t *testing.T) {
	ctx := context.Background()
	m, root := fakeV2(t, "cpu memory pids")
	pc, err := m.EnsurePod(ctx, uid, corev1.PodQOSBestEffort, Resources{CPUShares: 2})
	if err != nil {
		t.Fatal(err)
	}
	pod := filepath.Join(root, pc.Name)
	assertFile(t, filepath.Join(pod, "memory.max"), "max")
	assertFile(t, filepath.Join(pod, "cpu.max"), "max")
	assertFile(t, filepath.Join(pod, "pids.max"), "max")
	assertFile(t, filepath.Join(pod, "cpu.weight"), "1")
	assertFile(t, filepath.Join(root, "podhost/besteffort/cpu.weight"), "1")
	// Guaranteed pods sit right below the parent.
	g, err := m.EnsurePod(ctx, "g1", corev1.PodQOSGuaranteed, Resources{CPUShares: 1024, CPUQuota: 100000, MemoryLimit: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	assertFile(t, filepath.Join(root, "podhost/podg1/cpu.max"), "100000 100000")
	pods, err := m.ListPods(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(pods) != 2 || pods[0] != pc || pods[1] != g {
		t.Errorf("ListPods = %+v", pods)
	}
}

func TestV2MissingController(t *testing.T) {
	ctx := context.Background()
	m, root := fakeV2(t, "cpu pids")
	if _, err := m.EnsurePod(ctx, uid, corev1.PodQOSBurstable, Resources{CPUShares: 2}); err != nil {
		t.Fatalf("no memory limit requested: %v", err)
	}
	assertMissing(t, filepath.Join(root, "podhost/burstable/pod"+string(uid), "memory.max"))
	_, err := m.EnsurePod(ctx, "u2", corev1.PodQOSBurstable, Resources{MemoryLimit: 1 << 20})
	if err == nil || !strings.Contains(err.Error(), `"memory"`) {
		t.Fatalf("memory limit without controller: err = %v", err)
	}
	assertMissing(t, filepath.Join(root, "podhost/burstable/podu2")) // rolled back
}

func TestV2RemoveIdempotent(t *testing.T) {
	ctx := context.Background()
	m, root := fakeV2(t, "cpu memory pids")
	pc, err := m.EnsurePod(ctx, uid, corev1.PodQOSBurstable, Resources{CPUShares: 100})
	if err != nil {
		t.Fatal(err)
	}
	// a container cgroup left below the pod goes too (children first)
	mustWrite(t, filepath.Join(root, m.ContainerPath(pc, "c1"), "cgroup.procs"), "")
	for i := 0; i < 2; i++ {
		if err := m.RemovePod(ctx, pc); err != nil {
			t.Fatalf("RemovePod #%d: %v", i, err)
		}
	}
	assertMissing(t, filepath.Join(root, pc.Name))
	if pods, _ := m.ListPods(ctx); len(pods) != 0 {
		t.Errorf("ListPods after remove = %+v", pods)
	}
	if err := m.RemovePod(ctx, PodCgroup{Driver: DriverCgroupfs, Name: "/podhost"}); err == nil {
		t.Error("RemovePod of a non-pod path must fail")
	}
}
