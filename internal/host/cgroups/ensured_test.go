package cgroups

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// An unchanged EnsurePod only checks the cgroup is there; a changed
// Resources, a removed cgroup or a RemovePod makes the next one full.
func TestEnsureUnchangedSkipsWork(t *testing.T) {
	ctx := context.Background()
	m, root := fakeV2(t, "cpu memory pids")
	r := Resources{CPUShares: 512, MemoryLimit: 64 << 20}
	pc, err := m.EnsurePod(ctx, uid, corev1.PodQOSBurstable, r)
	if err != nil {
		t.Fatal(err)
	}
	mem := filepath.Join(root, pc.Name, "memory.max")
	mustWrite(t, mem, "1") // rewritten behind podhost's back
	if _, err := m.EnsurePod(ctx, uid, corev1.PodQOSBurstable, r); err != nil {
		t.Fatal(err)
	}
	assertFile(t, mem, "1") // unchanged pod: not rewritten (as the kubelet)

	r.MemoryLimit = 32 << 20
	if _, err := m.EnsurePod(ctx, uid, corev1.PodQOSBurstable, r); err != nil {
		t.Fatal(err)
	}
	assertFile(t, mem, "33554432") // changed resources: written

	if err := os.RemoveAll(filepath.Join(root, pc.Name)); err != nil {
		t.Fatal(err)
	}
	if _, err := m.EnsurePod(ctx, uid, corev1.PodQOSBurstable, r); err != nil {
		t.Fatal(err)
	}
	assertFile(t, mem, "33554432") // gone behind podhost's back: made again

	if err := m.RemovePod(ctx, pc); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, pc.Name), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := m.EnsurePod(ctx, uid, corev1.PodQOSBurstable, r); err != nil {
		t.Fatal(err)
	}
	assertFile(t, mem, "33554432") // after RemovePod: full again
}
