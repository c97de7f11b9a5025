//go:build integration

package integration

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// topCgroupFiles are the host's files of the daemon's top cgroup (cgroupfs
// driver): its cpu weight (v1 cpu.shares, v2 cpu.weight) and memory limit.
func (d *podhostd) topCgroupFiles() (cpu, mem string, v2 bool) {
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		dir := filepath.Join("/sys/fs/cgroup", d.cgroupRoot)
		return filepath.Join(dir, "cpu.weight"), filepath.Join(dir, "memory.max"), true
	}
	return filepath.Join("/sys/fs/cgroup/cpu", d.cgroupRoot, "cpu.shares"),
		filepath.Join("/sys/fs/cgroup/memory", d.cgroupRoot, "memory.limit_in_bytes"), false
}

// meminfoBytes reads a "<key>: <n> kB" line of /proc/meminfo (0 if absent).
func meminfoBytes(t *testing.T, key string) int64 {
	t.Helper()
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), key+":"); ok {
			v, err := strconv.ParseInt(strings.Fields(rest)[0], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return v * 1024
		}
	}
	return 0
}

// TestNodeAllocatableEnforced: as the kubelet with its default
// enforceNodeAllocatable [pods], the cgroup above every pod gets the cpu
// shares of capacity less systemReserved cpu and a memory limit of MemTotal
// less systemReserved memory and the huge pages (no eviction threshold),
// read on the host, and GET /v1/node's allocatable. A systemReserved beyond the node's
// capacity stops the daemon from starting, with one line naming it.
func TestNodeAllocatableEnforced(t *testing.T) {
	d := newPodhostd(t)
	appendConfig(t, d, "systemReserved:\n  cpu: 500m\n  memory: 1Gi\n")
	d.start()
	d.writeManifest("na.yaml", podManifest("na", `  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: `+env.ImageRef+`
    command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"]
`))
	d.waitRunning("na")

	cpuFile, memFile, v2 := d.topCgroupFiles()
	wantCPU := int64(runtime.NumCPU()*1000-500) * 1024 / 1000
	if v2 {
		wantCPU = 1 + ((wantCPU-2)*9999)/262142
	}
	hugetlb := meminfoBytes(t, "Hugetlb")
	if hugetlb == 0 {
		hugetlb = meminfoBytes(t, "HugePages_Total") / 1024 * meminfoBytes(t, "Hugepagesize")
	}
	wantMem := (meminfoBytes(t, "MemTotal") - 1<<30 - hugetlb) &^ int64(os.Getpagesize()-1)
	if got := readInt(t, cpuFile); got != wantCPU {
		t.Errorf("%s = %d, want %d", cpuFile, got, wantCPU)
	}
	if got := readInt(t, memFile); got != wantMem {
		t.Errorf("%s = %d, want %d (MemTotal - 1Gi - huge pages)", memFile, got, wantMem)
	}

	// GET /v1/node (get nodes, describe node) shows what pods are admitted
	// against: the enforced values less the 100Mi memory.available
	// eviction threshold.
	node, err := d.client.Node(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := node.Status.Allocatable.Cpu().MilliValue(); got != int64(runtime.NumCPU()*1000-500) {
		t.Errorf("node allocatable cpu %dm, want %dm", got, runtime.NumCPU()*1000-500)
	}
	if got, want := node.Status.Allocatable.Memory().Value(), meminfoBytes(t, "MemTotal")-1<<30-100<<20-hugetlb; got != want {
		t.Errorf("node allocatable memory %d, want %d", got, want)
	}
	if c := node.Status.Conditions; len(c) != 3 || c[2].Type != "Ready" || c[2].Status != "True" ||
		c[0].Type != "MemoryPressure" || c[0].Status != "False" || c[1].Type != "DiskPressure" {
		t.Errorf("node conditions %+v, want MemoryPressure, DiskPressure, Ready True", c)
	}

	// Reserved beyond capacity: the daemon does not start.
	bad := newPodhostd(t)
	appendConfig(t, bad, "systemReserved:\n  memory: 100Ti\n")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, env.PodhostBin, bad.args()...).CombinedOutput()
	if ctx.Err() != nil || err == nil || !strings.Contains(string(out), "systemReserved") {
		t.Fatalf("systemReserved memory 100Ti: want a failed start naming systemReserved, got %v:\n%s", err, out)
	}
}
