package cgroups

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// ErrNoCgroup means the cgroup to read does not exist (the pod or container
// is gone, or not started yet).
var ErrNoCgroup = errors.New("cgroup does not exist")

// Stats are the usage figures of one cgroup, read as cAdvisor reads them.
type Stats struct {
	Time time.Time
	// CPUUsageNanos is the cumulative CPU time (v1 cpuacct.usage, v2
	// cpu.stat usage_usec × 1000).
	CPUUsageNanos uint64
	// MemoryUsage is v1 memory.usage_in_bytes / v2 memory.current.
	MemoryUsage uint64
	// MemoryWorkingSet is MemoryUsage minus inactive file pages (0 if
	// negative): cAdvisor's working set, what kubectl top shows.
	MemoryWorkingSet uint64
	// Pids is pids.current: the tasks (threads) in the cgroup.
	Pids uint64
}

// Reader reads the usage of pod and container cgroups. A Manager has one
// (Manager.PodStats); NewReader makes one over any root (tests' fake roots).
type Reader struct {
	root   string
	v2     bool
	driver string
	parent string
}

// NewReader reads the cgroups a Manager with this driver and parent makes
// under root; unified tells the v2 file layout from v1's.
func NewReader(root string, unified bool, driver, parent string) *Reader {
	return &Reader{root: root, v2: unified, driver: driver, parent: parent}
}

// PodStats reads the usage of the pod's cgroup (uid, qos as given to
// EnsurePod). A missing cgroup is ErrNoCgroup.
func (m *Manager) PodStats(uid types.UID, qos corev1.PodQOSClass) (Stats, error) {
	return m.stats.PodStats(uid, qos)
}

// ContainerStats reads the usage of one container's cgroup in the pod.
func (m *Manager) ContainerStats(uid types.UID, qos corev1.PodQOSClass, containerID string) (Stats, error) {
	return m.stats.ContainerStats(uid, qos, containerID)
}

// PodStats reads the usage of the pod's cgroup.
func (r *Reader) PodStats(uid types.UID, qos corev1.PodQOSClass) (Stats, error) {
	return r.read(r.cgroupDir(uid, qos, ""))
}

// PodsStats reads the usage of the cgroup above every pod (the parent:
// the kubelet's kubepods), for the eviction signal
// allocatableMemory.available.
func (m *Manager) PodsStats() (Stats, error) { return m.stats.PodsStats() }

// PodsStats reads the usage of the parent cgroup.
func (r *Reader) PodsStats() (Stats, error) {
	if r.driver == DriverSystemd {
		return r.read(expandSlice(parentSlice(r.parent)))
	}
	return r.read("/" + r.parent)
}

// ContainerStats reads the usage of one container's cgroup in the pod.
func (r *Reader) ContainerStats(uid types.UID, qos corev1.PodQOSClass, containerID string) (Stats, error) {
	if containerID == "" || strings.ContainsAny(containerID, "/.") {
		return Stats{}, fmt.Errorf("cgroups: bad container id %q", containerID)
	}
	return r.read(r.cgroupDir(uid, qos, containerID))
}

// cgroupDir is the path of the pod (or container) cgroup relative to a
// hierarchy root.
func (r *Reader) cgroupDir(uid types.UID, qos corev1.PodQOSClass, containerID string) string {
	if r.driver == DriverSystemd {
		dir := expandSlice(sliceName(r.parent, qos, uid))
		if containerID != "" {
			return dir + "/" + systemdPrefix + "-" + containerID + ".scope"
		}
		return dir
	}
	dir := fsPath(r.parent, qos, uid)
	if containerID != "" {
		return dir + "/" + containerID
	}
	return dir
}

// expandSlice turns a slice name into its path as systemd nests it:
// a-b-c.slice → /a.slice/a-b.slice/a-b-c.slice.
func expandSlice(name string) string {
	parts := strings.Split(strings.TrimSuffix(name, ".slice"), "-")
	var b strings.Builder
	for i := range parts {
		b.WriteString("/" + strings.Join(parts[:i+1], "-") + ".slice")
	}
	return b.String()
}

func (r *Reader) read(dir string) (Stats, error) {
	st := Stats{Time: time.Now()}
	var err error
	if r.v2 {
		err = r.readV2(filepath.Join(r.root, dir), &st)
	} else {
		err = r.readV1(dir, &st)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return Stats{}, fmt.Errorf("cgroups: %s: %w", dir, ErrNoCgroup)
	}
	if err != nil {
		return Stats{}, fmt.Errorf("cgroups: read stats of %s: %w", dir, err)
	}
	return st, nil
}

func (r *Reader) readV2(dir string, st *Stats) error {
	cpu, err := readKeyed(filepath.Join(dir, "cpu.stat"))
	if err != nil {
		return err
	}
	st.CPUUsageNanos = cpu["usage_usec"] * 1000
	if st.MemoryUsage, err = readUint(filepath.Join(dir, "memory.current")); err != nil {
		return err
	}
	mem, err := readKeyed(filepath.Join(dir, "memory.stat"))
	if err != nil {
		return err
	}
	st.MemoryWorkingSet = workingSet(st.MemoryUsage, mem["inactive_file"])
	st.Pids, err = readUint(filepath.Join(dir, "pids.current"))
	return err
}

func (r *Reader) readV1(dir string, st *Stats) error {
	var err error
	if st.CPUUsageNanos, err = readUint(filepath.Join(r.root, "cpuacct", dir, "cpuacct.usage")); err != nil {
		return err
	}
	memDir := filepath.Join(r.root, "memory", dir)
	if st.MemoryUsage, err = readUint(filepath.Join(memDir, "memory.usage_in_bytes")); err != nil {
		return err
	}
	mem, err := readKeyed(filepath.Join(memDir, "memory.stat"))
	if err != nil {
		return err
	}
	st.MemoryWorkingSet = workingSet(st.MemoryUsage, mem["total_inactive_file"])
	st.Pids, err = readUint(filepath.Join(r.root, "pids", dir, "pids.current"))
	return err
}

// workingSet is cAdvisor's: usage minus inactive file pages, floored at 0.
func workingSet(usage, inactiveFile uint64) uint64 {
	if inactiveFile >= usage {
		return 0
	}
	return usage - inactiveFile
}

func readUint(path string) (uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	s := strings.TrimSpace(string(b))
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("parse %s: %w", path, err)
	}
	return v, nil
}

// readKeyed reads a "key value" per line file (memory.stat, cpu.stat).
func readKeyed(path string) (map[string]uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := map[string]uint64{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		if n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64); err == nil {
			out[k] = n
		}
	}
	return out, sc.Err()
}
