package cgroups

import (
	"errors"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestStatsV2(t *testing.T) {
	m, root := fakeV2(t, "cpu memory pids")
	pod := filepath.Join(root, "podhost/burstable/pod"+string(uid))
	for dir, f := range map[string][4]string{
		pod:                      {"usage_usec 2500000\nuser_usec 2000000\n", "10485760\n", "anon 1\ninactive_file 4194304\n", "7\n"},
		filepath.Join(pod, "c1"): {"usage_usec 1000\n", "1000\n", "inactive_file 5000\n", "1\n"},
	} {
		mustWrite(t, filepath.Join(dir, "cpu.stat"), f[0])
		mustWrite(t, filepath.Join(dir, "memory.current"), f[1])
		mustWrite(t, filepath.Join(dir, "memory.stat"), f[2])
		mustWrite(t, filepath.Join(dir, "pids.current"), f[3])
	}
	st, err := m.PodStats(uid, corev1.PodQOSBurstable)
	if err != nil {
		t.Fatal(err)
	}
	if st.CPUUsageNanos != 2500000000 || st.MemoryUsage != 10485760 || st.MemoryWorkingSet != 6291456 || st.Pids != 7 {
		t.Errorf("pod stats = %+v", st)
	}
	cs, err := m.ContainerStats(uid, corev1.PodQOSBurstable, "c1")
	if err != nil {
		t.Fatal(err)
	}
	if cs.CPUUsageNanos != 1000000 || cs.MemoryWorkingSet != 0 || cs.Pids != 1 {
		t.Errorf("container stats = %+v (working set floors at 0)", cs)
	}
	if _, err := m.ContainerStats(uid, corev1.PodQOSBurstable, "gone"); !errors.Is(err, ErrNoCgroup) {
		t.Errorf("missing container: err = %v, want ErrNoCgroup", err)
	}
	if _, err := m.ContainerStats(uid, corev1.PodQOSBurstable, "../x"); err == nil {
		t.Error("container id with a path accepted")
	}
}

func TestStatsV1(t *testing.T) {
	m, root := fakeV1(t)
	rel := "podhost/pod" + string(uid) + "/c1"
	mustWrite(t, filepath.Join(root, "cpuacct", rel, "cpuacct.usage"), "123456789\n")
	mustWrite(t, filepath.Join(root, "memory", rel, "memory.usage_in_bytes"), "9000\n")
	mustWrite(t, filepath.Join(root, "memory", rel, "memory.stat"), "cache 100\ninactive_file 50\ntotal_inactive_file 1000\n")
	mustWrite(t, filepath.Join(root, "pids", rel, "pids.current"), "3\n")
	st, err := m.ContainerStats(uid, corev1.PodQOSGuaranteed, "c1")
	if err != nil {
		t.Fatal(err)
	}
	if st.CPUUsageNanos != 123456789 || st.MemoryUsage != 9000 || st.MemoryWorkingSet != 8000 || st.Pids != 3 {
		t.Errorf("stats = %+v", st)
	}
	if _, err := m.PodStats(uid, corev1.PodQOSBestEffort); !errors.Is(err, ErrNoCgroup) {
		t.Errorf("missing pod: err = %v", err)
	}
}

func TestExpandSlice(t *testing.T) {
	for in, want := range map[string]string{
		"podhost-pod1.slice":           "/podhost.slice/podhost-pod1.slice",
		"podhost-burstable-pod1.slice": "/podhost.slice/podhost-burstable.slice/podhost-burstable-pod1.slice",
	} {
		if got := expandSlice(in); got != want {
			t.Errorf("expandSlice(%q) = %q, want %q", in, got, want)
		}
	}
}

// The systemd driver's pod slice is nested by dashes; its containers are
// runc's podhost-<id>.scope below it.
func TestReaderSystemdV2(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "podhost.slice/podhost-besteffort.slice/podhost-besteffort-pod"+escapeSystemd(string(uid))+".slice/podhost-c1.scope")
	mustWrite(t, filepath.Join(dir, "cpu.stat"), "usage_usec 7\n")
	mustWrite(t, filepath.Join(dir, "memory.current"), "4096\n")
	mustWrite(t, filepath.Join(dir, "memory.stat"), "inactive_file 1024\n")
	mustWrite(t, filepath.Join(dir, "pids.current"), "2\n")
	st, err := NewReader(root, true, DriverSystemd, "podhost").ContainerStats(uid, corev1.PodQOSBestEffort, "c1")
	if err != nil {
		t.Fatal(err)
	}
	if st.CPUUsageNanos != 7000 || st.MemoryWorkingSet != 3072 || st.Pids != 2 {
		t.Errorf("stats = %+v", st)
	}
}

// The parent's usage: /podhost.slice with systemd, /podhost with cgroupfs.
func TestReaderPodsStats(t *testing.T) {
	for _, c := range []struct{ driver, dir string }{{DriverSystemd, "podhost.slice"}, {DriverCgroupfs, "podhost"}} {
		root := t.TempDir()
		dir := filepath.Join(root, c.dir)
		mustWrite(t, filepath.Join(dir, "cpu.stat"), "usage_usec 7\n")
		mustWrite(t, filepath.Join(dir, "memory.current"), "8192\n")
		mustWrite(t, filepath.Join(dir, "memory.stat"), "inactive_file 1024\n")
		mustWrite(t, filepath.Join(dir, "pids.current"), "2\n")
		st, err := NewReader(root, true, c.driver, "podhost").PodsStats()
		if err != nil || st.MemoryWorkingSet != 7168 {
			t.Errorf("%s: stats = %+v, %v", c.driver, st, err)
		}
	}
}
