package cgroups

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestV1NodeAllocatable: the top cgroup gets cpu.shares and
// memory.limit_in_bytes and nothing else (an operator's quota stays);
// unchanged values are not written again while it exists; a pod's ensure
// leaves them; a refused memory limit does not stop the cpu.shares.
func TestV1NodeAllocatable(t *testing.T) {
	ctx := context.Background()
	m, root := fakeV1(t)
	cpu, mem := filepath.Join(root, "cpu,cpuacct/podhost"), filepath.Join(root, "memory/podhost")
	mustWrite(t, filepath.Join(cpu, "cpu.cfs_quota_us"), "150000")
	if err := m.SetNodeAllocatable(ctx, 1500, 3<<30); err != nil {
		t.Fatal(err)
	}
	assertFile(t, filepath.Join(cpu, "cpu.shares"), "1536")
	assertFile(t, filepath.Join(cpu, "cpu.cfs_quota_us"), "150000")
	assertFile(t, filepath.Join(mem, "memory.limit_in_bytes"), fmt.Sprint(3<<30))
	assertMissing(t, filepath.Join(root, "pids/podhost/pids.max"))
	if _, err := m.EnsurePod(ctx, uid, corev1.PodQOSBurstable, Resources{CPUShares: 256, MemoryLimit: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	assertFile(t, filepath.Join(mem, "memory.limit_in_bytes"), fmt.Sprint(3<<30))

	mustWrite(t, filepath.Join(cpu, "cpu.shares"), "1024")
	if err := m.SetNodeAllocatable(ctx, 1500, 3<<30); err != nil {
		t.Fatal(err)
	}
	assertFile(t, filepath.Join(cpu, "cpu.shares"), "1024") // unchanged: not written
	if err := m.SetNodeAllocatable(ctx, 2000, 0); err != nil {
		t.Fatal(err)
	}
	assertFile(t, filepath.Join(cpu, "cpu.shares"), "2048")
	assertFile(t, filepath.Join(mem, "memory.limit_in_bytes"), "-1")

	if err := os.Remove(filepath.Join(mem, "memory.limit_in_bytes")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(mem, "memory.limit_in_bytes"), 0o755); err != nil { // writes fail (EBUSY on a host)
		t.Fatal(err)
	}
	if err := m.SetNodeAllocatable(ctx, 1000, 1<<30); err == nil {
		t.Fatal("a refused memory limit: want an error")
	}
	assertFile(t, filepath.Join(cpu, "cpu.shares"), "1024")
}

// TestV2NodeAllocatable: cpu.weight and memory.max on the top cgroup, the
// controllers enabled in the root; a value the kernel refuses is an error
// and is tried again by the next call.
func TestV2NodeAllocatable(t *testing.T) {
	ctx := context.Background()
	m, root := fakeV2(t, "cpu memory pids")
	if err := m.SetNodeAllocatable(ctx, 2000, 3<<30); err != nil {
		t.Fatal(err)
	}
	top := filepath.Join(root, "podhost")
	assertFile(t, filepath.Join(root, "cgroup.subtree_control"), "+cpu +memory +pids")
	assertFile(t, filepath.Join(top, "cpu.weight"), "79")
	assertMissing(t, filepath.Join(top, "cpu.max"))
	assertMissing(t, filepath.Join(top, "pids.max"))
	assertFile(t, filepath.Join(top, "memory.max"), fmt.Sprint(3<<30))

	if err := os.Remove(filepath.Join(top, "memory.max")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(top, "memory.max"), 0o755); err != nil { // writes fail
		t.Fatal(err)
	}
	if err := m.SetNodeAllocatable(ctx, 2000, 2<<30); err == nil {
		t.Fatal("a refused memory.max: want an error")
	}
	if err := os.Remove(filepath.Join(top, "memory.max")); err != nil {
		t.Fatal(err)
	}
	if err := m.SetNodeAllocatable(ctx, 2000, 2<<30); err != nil {
		t.Fatal(err)
	}
	assertFile(t, filepath.Join(top, "memory.max"), fmt.Sprint(2<<30))

	m, _ = fakeV2(t, "cpu pids")
	if err := m.SetNodeAllocatable(ctx, 2000, 3<<30); err == nil {
		t.Error("no memory controller: want an error (the limit cannot be set)")
	}
}

// TestSystemdNodeAllocatable: the top slice is started with the weight
// and MemoryMax (v2) or CPUShares and MemoryLimit (v1), or has them set
// when it runs.
func TestSystemdNodeAllocatable(t *testing.T) {
	ctx := context.Background()
	m, fc := newSystemdManager(t, ModeUnified)
	if err := m.SetNodeAllocatable(ctx, 2000, 3<<30); err != nil {
		t.Fatal(err)
	}
	if want := "[start podhost.slice]"; fmt.Sprint(fc.calls) != want {
		t.Errorf("calls = %v, want %s", fc.calls, want)
	}
	top := fc.units["podhost.slice"]
	if got, _ := prop(top, "CPUWeight"); got != uint64(79) {
		t.Errorf("CPUWeight = %v, want 79", got)
	}
	if got, _ := prop(top, "MemoryMax"); got != uint64(3<<30) {
		t.Errorf("MemoryMax = %v, want %d", got, 3<<30)
	}
	for _, name := range []string{"TasksMax", "CPUQuotaPerSecUSec"} {
		if got, ok := prop(top, name); ok {
			t.Errorf("%s = %v set: an operator's limit would be lost", name, got)
		}
	}
	fc.calls = nil
	if err := m.SetNodeAllocatable(ctx, 1000, 2<<30); err != nil {
		t.Fatal(err)
	}
	if want := "[start podhost.slice set podhost.slice]"; fmt.Sprint(fc.calls) != want {
		t.Errorf("calls = %v, want %s", fc.calls, want)
	}
	if got, _ := prop(fc.units["podhost.slice"], "MemoryMax"); got != uint64(2<<30) {
		t.Errorf("MemoryMax after the update = %v, want %d", got, 2<<30)
	}

	m, fc = newSystemdManager(t, ModeHybrid)
	if err := m.SetNodeAllocatable(ctx, 2000, 3<<30); err != nil {
		t.Fatal(err)
	}
	if got, _ := prop(fc.units["podhost.slice"], "CPUShares"); got != uint64(2048) {
		t.Errorf("v1 CPUShares = %v, want 2048", got)
	}
	if got, _ := prop(fc.units["podhost.slice"], "MemoryLimit"); got != uint64(3<<30) {
		t.Errorf("v1 MemoryLimit = %v, want %d", got, 3<<30)
	}
}
