package cgroups

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
)

// fakeV1 is a plain dir laid out like a hybrid host: cpu and cpuacct
// co-mounted with the usual symlinks, cpuset, memory, pids, a named
// systemd hierarchy and a controller-less unified one.
func fakeV1(t *testing.T) (*Manager, string) {
	t.Helper()
	root := t.TempDir()
	for _, h := range []string{"cpu,cpuacct", "cpuset", "memory", "pids", "systemd", "unified"} {
		if err := os.Mkdir(filepath.Join(root, h), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range []string{"cpu", "cpuacct"} {
		if err := os.Symlink("cpu,cpuacct", filepath.Join(root, l)); err != nil {
			t.Fatal(err)
		}
	}
	mustWrite(t, filepath.Join(root, "cpuset/cpuset.cpus"), "0-3\n")
	mustWrite(t, filepath.Join(root, "cpuset/cpuset.mems"), "0\n")
	mustWrite(t, filepath.Join(root, "not-a-hierarchy"), "")
	m, err := New(context.Background(), Options{
		Driver: DriverAuto, Root: root, Logger: testLogger(t),
		detectMode:  func(string) string { return ModeHybrid },
		systemdUp:   func() bool { return true },
		isHierarchy: func(string) bool { return true },
	})
	if err != nil {
		t.Fatal(err)
	}
	if m.Driver() != DriverCgroupfs || m.Mode() != ModeHybrid {
		t.Fatalf("driver/mode = %s/%s", m.Driver(), m.Mode())
	}
	return m, root
}

func TestV1Fake(t *testing.T) {
	ctx := context.Background()
	m, root := fakeV1(t)
	r := Resources{CPUShares: 512, CPUQuota: 50000, CPUPeriod: 100000, MemoryLimit: 64 << 20, PidsLimit: 100}
	pc, err := m.EnsurePod(ctx, uid, corev1.PodQOSBurstable, r)
	if err != nil {
		t.Fatal(err)
	}
	cpu := filepath.Join(root, "cpu,cpuacct", pc.Name)
	assertFile(t, filepath.Join(cpu, "cpu.shares"), "512")
	assertFile(t, filepath.Join(cpu, "cpu.cfs_period_us"), "100000")
	assertFile(t, filepath.Join(cpu, "cpu.cfs_quota_us"), "50000")
	assertFile(t, filepath.Join(root, "memory", pc.Name, "memory.limit_in_bytes"), "67108864")
	assertFile(t, filepath.Join(root, "pids", pc.Name, "pids.max"), "100")
	for _, h := range []string{"cpuset", "systemd", "unified"} {
		if !isDir(filepath.Join(root, h, pc.Name)) {
			t.Errorf("pod dir missing in %s", h)
		}
	}
	be, err := m.EnsurePod(ctx, "be1", corev1.PodQOSBestEffort, Resources{CPUShares: 2})
	if err != nil {
		t.Fatal(err)
	}
	assertFile(t, filepath.Join(root, "cpu,cpuacct/podhost/besteffort/cpu.shares"), "2")
	assertFile(t, filepath.Join(root, "cpu,cpuacct", be.Name, "cpu.cfs_quota_us"), "-1")
	assertFile(t, filepath.Join(root, "memory", be.Name, "memory.limit_in_bytes"), "-1")
	assertFile(t, filepath.Join(root, "pids", be.Name, "pids.max"), "max")

	pods, err := m.ListPods(ctx)
	if err != nil || len(pods) != 2 {
		t.Fatalf("ListPods = %+v, %v", pods, err)
	}
	for _, p := range pods {
		if err := m.RemovePod(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	for _, h := range []string{"cpu,cpuacct", "cpuset", "memory", "pids", "systemd", "unified"} {
		assertMissing(t, filepath.Join(root, h, pc.Name))
		assertMissing(t, filepath.Join(root, h, be.Name))
	}
}

// TestV1RealHost runs against the host's v1/hybrid hierarchies with a unique
// parent and removes everything it made.
func TestV1RealHost(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	if mode := detectMode(DefaultRoot); mode != ModeHybrid && mode != ModeLegacy {
		t.Skipf("host cgroup mode is %s", mode)
	}
	ctx := context.Background()
	parent := fmt.Sprintf("podhost-test-%d", os.Getpid())
	m, err := New(ctx, Options{Driver: DriverCgroupfs, Parent: parent, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	fsd := m.drv.(*fsDriver)
	t.Cleanup(func() { removeParent(t, fsd) })

	r := Resources{CPUShares: 256, CPUQuota: 20000, CPUPeriod: 100000, MemoryLimit: 32 << 20, PidsLimit: 64}
	pc, err := m.EnsurePod(ctx, uid, corev1.PodQOSBurstable, r)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.EnsurePod(ctx, uid, corev1.PodQOSBurstable, r); err != nil {
		t.Fatalf("EnsurePod again: %v", err)
	}
	assertFile(t, filepath.Join(fsd.controllers["cpu"], pc.Name, "cpu.cfs_quota_us"), "20000")
	assertFile(t, filepath.Join(fsd.controllers["cpu"], pc.Name, "cpu.shares"), "256")
	assertFile(t, filepath.Join(fsd.controllers["memory"], pc.Name, "memory.limit_in_bytes"), strconv.Itoa(32<<20))
	assertFile(t, filepath.Join(fsd.controllers["pids"], pc.Name, "pids.max"), "64")
	if cs := fsd.controllers["cpuset"]; cs != "" {
		assertFile(t, filepath.Join(cs, pc.Name, "cpuset.cpus"), readTrim(t, filepath.Join(cs, "cpuset.cpus")))
	}
	// A container cgroup made below the pod (as runc would) is removed too.
	if err := os.Mkdir(filepath.Join(fsd.controllers["pids"], m.ContainerPath(pc, "c1")), 0o755); err != nil {
		t.Fatal(err)
	}
	testRemoveBusy(t, m, fsd, pc)
	if err := m.RemovePod(ctx, pc); err != nil {
		t.Fatalf("RemovePod again: %v", err)
	}
	if pods, err := m.ListPods(ctx); err != nil || len(pods) != 0 {
		t.Errorf("ListPods = %+v, %v", pods, err)
	}
}

// testRemoveBusy puts a child process in the pod's pids cgroup: RemovePod
// fails with EBUSY until it is gone.
func testRemoveBusy(t *testing.T, m *Manager, fsd *fsDriver, pc PodCgroup) {
	ctx := context.Background()
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := strconv.Itoa(cmd.Process.Pid)
	if err := os.WriteFile(filepath.Join(fsd.controllers["pids"], pc.Name, "cgroup.procs"), []byte(pid), 0o644); err != nil {
		_ = cmd.Process.Kill()
		t.Fatal(err)
	}
	err := m.RemovePod(ctx, pc)
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if !errors.Is(err, unix.EBUSY) {
		t.Fatalf("RemovePod with a process inside: err = %v, want EBUSY", err)
	}
	if err := m.RemovePod(ctx, pc); err != nil {
		t.Fatalf("RemovePod after the process exited: %v", err)
	}
	for _, h := range fsd.hierarchies {
		assertMissing(t, filepath.Join(h, pc.Name))
	}
}

// removeParent deletes the test parent (and QoS levels) in every hierarchy.
func removeParent(t *testing.T, fsd *fsDriver) {
	for _, h := range fsd.hierarchies {
		for _, l := range []string{"burstable", "besteffort", ""} {
			p := filepath.Join(h, fsd.parent, l)
			if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
				t.Errorf("cleanup %s: %v", p, err)
			}
		}
	}
}
