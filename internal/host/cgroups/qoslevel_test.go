package cgroups

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestV1BurstableLevelShares: the Burstable level is made in every
// hierarchy with its cpu.shares; a pod's ensure leaves them; an unchanged
// value is not written again while the level exists; a missing level is
// made again.
func TestV1BurstableLevelShares(t *testing.T) {
	ctx := context.Background()
	m, root := fakeV1(t)
	shares := filepath.Join(root, "cpu,cpuacct/podhost/burstable/cpu.shares")
	if err := m.SetBurstableCPUShares(ctx, 1085); err != nil {
		t.Fatal(err)
	}
	assertFile(t, shares, "1085")
	for _, h := range []string{"cpuset", "memory", "pids", "systemd", "unified"} {
		if !isDir(filepath.Join(root, h, "podhost/burstable")) {
			t.Errorf("burstable level missing in %s", h)
		}
	}
	assertMissing(t, filepath.Join(root, "cpu,cpuacct/podhost/besteffort"))
	if _, err := m.EnsurePod(ctx, uid, corev1.PodQOSBurstable, Resources{CPUShares: 256}); err != nil {
		t.Fatal(err)
	}
	assertFile(t, shares, "1085") // not reset by a pod's ensure

	mustWrite(t, shares, "1024") // an unchanged value is not written again
	if err := m.SetBurstableCPUShares(ctx, 1085); err != nil {
		t.Fatal(err)
	}
	assertFile(t, shares, "1024")

	for _, tc := range []struct {
		in   uint64
		want string
	}{{2048, "2048"}, {0, "2"}, {1, "2"}, {1 << 20, "262144"}} {
		if err := m.SetBurstableCPUShares(ctx, tc.in); err != nil {
			t.Fatal(err)
		}
		assertFile(t, shares, tc.want)
	}

	if err := rmTree(filepath.Join(root, "pids/podhost/burstable")); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, shares, "1024")
	if err := m.SetBurstableCPUShares(ctx, MaxShares); err != nil { // same value, level gone: made again
		t.Fatal(err)
	}
	if !isDir(filepath.Join(root, "pids/podhost/burstable")) {
		t.Error("burstable level not made again in pids")
	}
	assertFile(t, shares, "262144")
	if m.setLevelShares(ctx, corev1.PodQOSGuaranteed, 2) == nil {
		t.Error("Guaranteed has no QoS level: want an error")
	}
}

// TestV2BurstableLevelShares: cpu.weight from the shares (SharesToWeight),
// controllers enabled on the way; no cpu controller, no weight, no error.
func TestV2BurstableLevelShares(t *testing.T) {
	ctx := context.Background()
	m, root := fakeV2(t, "cpu memory pids")
	weight := filepath.Join(root, "podhost/burstable/cpu.weight")
	if err := m.SetBurstableCPUShares(ctx, 1085); err != nil {
		t.Fatal(err)
	}
	assertFile(t, weight, "42")
	for _, dir := range []string{root, filepath.Join(root, "podhost")} {
		assertFile(t, filepath.Join(dir, "cgroup.subtree_control"), "+cpu +memory +pids")
	}
	if _, err := m.EnsurePod(ctx, uid, corev1.PodQOSBurstable, Resources{CPUShares: 256}); err != nil {
		t.Fatal(err)
	}
	assertFile(t, weight, "42")
	mustWrite(t, weight, "100")
	if err := m.SetBurstableCPUShares(ctx, 1085); err != nil {
		t.Fatal(err)
	}
	assertFile(t, weight, "100") // unchanged: not written
	if err := m.SetBurstableCPUShares(ctx, 2); err != nil {
		t.Fatal(err)
	}
	assertFile(t, weight, "1")

	m, root = fakeV2(t, "memory pids")
	if err := m.SetBurstableCPUShares(ctx, 1085); err != nil {
		t.Fatalf("no cpu controller: %v", err)
	}
	if !isDir(filepath.Join(root, "podhost/burstable")) {
		t.Error("burstable level not made")
	}
	assertMissing(t, filepath.Join(root, "podhost/burstable/cpu.weight"))
}

// TestSystemdBurstableLevelShares: the Burstable slice gets CPUWeight (v2)
// or CPUShares (v1), started if missing, else set; a pod's ensure leaves it.
func TestSystemdBurstableLevelShares(t *testing.T) {
	ctx := context.Background()
	m, fc := newSystemdManager(t, ModeUnified)
	const slice = "podhost-burstable.slice"
	if err := m.SetBurstableCPUShares(ctx, 1085); err != nil {
		t.Fatal(err)
	}
	if want := "[start podhost.slice start " + slice + "]"; fmt.Sprint(fc.calls) != want {
		t.Errorf("calls = %v, want %s", fc.calls, want)
	}
	if got, _ := prop(fc.units[slice], "CPUWeight"); got != uint64(42) {
		t.Errorf("CPUWeight = %v, want 42", got)
	}
	if got, _ := prop(fc.units[slice], "Wants"); fmt.Sprint(got) != "[podhost.slice]" {
		t.Errorf("Wants = %v", got)
	}
	if _, err := m.EnsurePod(ctx, uid, corev1.PodQOSBurstable, Resources{CPUShares: 256}); err != nil {
		t.Fatal(err)
	}
	fc.calls = nil
	if err := m.SetBurstableCPUShares(ctx, 2048); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(fc.calls) != "[start podhost.slice start "+slice+" set "+slice+"]" {
		t.Errorf("calls = %v, want a set-property of %s", fc.calls, slice)
	}
	if got, _ := prop(fc.units[slice], "CPUWeight"); got != uint64(79) {
		t.Errorf("CPUWeight = %v, want 79", got)
	}

	m, fc = newSystemdManager(t, ModeHybrid)
	if err := m.SetBurstableCPUShares(ctx, 1085); err != nil {
		t.Fatal(err)
	}
	if got, _ := prop(fc.units[slice], "CPUShares"); got != uint64(1085) {
		t.Errorf("v1 CPUShares = %v, want 1085", got)
	}
}

// TestSystemdBurstableLevelSkip: on a unified host an unchanged value is
// not sent again while the slice's cgroup exists.
func TestSystemdBurstableLevelSkip(t *testing.T) {
	ctx := context.Background()
	fc, root := newFakeConn(), t.TempDir()
	m, err := New(ctx, Options{Root: root, Logger: testLogger(t),
		detectMode: func(string) string { return ModeUnified }, systemdUp: func() bool { return true },
		newConn: func(context.Context) (systemdConn, error) { return fc, nil }})
	if err != nil || m.Driver() != DriverSystemd {
		t.Fatalf("New: %v, %v", m, err)
	}
	for i := 0; i < 2; i++ {
		if err := m.SetBurstableCPUShares(ctx, 1085); err != nil {
			t.Fatal(err)
		}
	}
	// No cgroup dir yet: both calls are full (the second sets the property).
	if want := "[start podhost.slice start podhost-burstable.slice start podhost.slice start podhost-burstable.slice set podhost-burstable.slice]"; fmt.Sprint(fc.calls) != want {
		t.Fatalf("calls = %v, want %s", fc.calls, want)
	}
	if err := os.MkdirAll(filepath.Join(root, "podhost.slice/podhost-burstable.slice"), 0o755); err != nil {
		t.Fatal(err)
	}
	fc.calls = nil
	if err := m.SetBurstableCPUShares(ctx, 1085); err != nil {
		t.Fatal(err)
	}
	if len(fc.calls) != 0 {
		t.Errorf("unchanged shares, slice there: calls = %v, want none", fc.calls)
	}
	if err := m.SetBurstableCPUShares(ctx, 512); err != nil {
		t.Fatal(err)
	}
	if got, _ := prop(fc.units["podhost-burstable.slice"], "CPUWeight"); got != SharesToWeight(512) {
		t.Errorf("CPUWeight = %v, want %d", got, SharesToWeight(512))
	}
}
