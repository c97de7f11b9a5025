package admission

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// The kubelet's default hard eviction thresholds (DefaultEvictionHard,
// pkg/kubelet/apis/config/v1beta1/defaults_linux.go) that its
// GetNodeAllocatableReservation (pkg/kubelet/cm/node_container_manager_linux.go,
// hardEvictionReservation) keeps out of allocatable: memory.available<100Mi
// and nodefs.available<10%, unless the config sets evictionHard
// (Host.EvictionReservation).
const (
	EvictionMemoryAvailable = 100 << 20 // bytes
	EvictionNodeFSPercent   = 10
)

func (h Host) readMemInfo() ([]byte, error) {
	read := h.MemInfo
	if read == nil {
		read = func() ([]byte, error) { return os.ReadFile("/proc/meminfo") }
	}
	data, err := read()
	if err != nil {
		return nil, fmt.Errorf("read meminfo: %w", err)
	}
	return data, nil
}

// withEphemeralStorage adds the size of RootDir's filesystem to capacity
// as ephemeral-storage (the kubelet's: cadvisor's RootFsInfo of its root
// dir).
func (h Host) withEphemeralStorage(capacity corev1.ResourceList) (corev1.ResourceList, error) {
	if h.RootDir == "" {
		return capacity, nil
	}
	statFS := h.StatFS
	if statFS == nil {
		statFS = fsSize
	}
	size, err := statFS(h.RootDir)
	if err != nil {
		return nil, fmt.Errorf("ephemeral-storage capacity: %w", err)
	}
	capacity[corev1.ResourceEphemeralStorage] = *resource.NewQuantity(size, resource.BinarySI)
	return capacity, nil
}

// fsSize is the size in bytes of the filesystem holding path (statfs
// blocks × fragment size, as cadvisor).
func fsSize(path string) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return 0, fmt.Errorf("statfs %s: %w", path, err)
	}
	return int64(st.Blocks) * st.Frsize, nil
}

// allocatable is the kubelet's node status allocatable (nodestatus
// MachineInfo): capacity minus GetNodeAllocatableReservation (reserved
// plus the hard eviction thresholds), never below zero, then memory minus
// the huge pages.
func allocatable(capacity, reserved corev1.ResourceList, hugePageBytes int64, eviction corev1.ResourceList) corev1.ResourceList {
	return lessReserved(capacity, hugePageBytes, reserved, eviction)
}

// evictionReservation is the configured thresholds' reservation, else the
// kubelet's defaults'.
func (h Host) evictionReservation(capacity corev1.ResourceList) corev1.ResourceList {
	if h.EvictionReservation != nil {
		return h.EvictionReservation(capacity)
	}
	return evictionReservation(capacity)
}

// evictionReservation is the kubelet's hardEvictionReservation for its
// default hard eviction thresholds.
func evictionReservation(capacity corev1.ResourceList) corev1.ResourceList {
	eviction := corev1.ResourceList{corev1.ResourceMemory: *resource.NewQuantity(EvictionMemoryAvailable, resource.BinarySI)}
	if fs, ok := capacity[corev1.ResourceEphemeralStorage]; ok {
		eviction[corev1.ResourceEphemeralStorage] = *resource.NewQuantity(fs.Value()*EvictionNodeFSPercent/100, resource.BinarySI)
	}
	return eviction
}

// lessReserved is capacity minus every list, memory minus the huge pages,
// never below zero.
func lessReserved(capacity corev1.ResourceList, hugePageBytes int64, lists ...corev1.ResourceList) corev1.ResourceList {
	out := make(corev1.ResourceList, len(capacity))
	for name, c := range capacity {
		c = c.DeepCopy()
		for _, list := range lists {
			if r, ok := list[name]; ok {
				c.Sub(r)
			}
		}
		if name == corev1.ResourceMemory {
			c.Sub(*resource.NewQuantity(hugePageBytes, resource.BinarySI))
		}
		if c.Sign() < 0 {
			c = *resource.NewQuantity(0, c.Format)
		}
		out[name] = c
	}
	return out
}

// Enforced is what the kubelet, with its default enforceNodeAllocatable
// [pods], enforces on its top cgroup (getNodeAllocatableAbsolute): cpu and
// memory capacity less reserved, memory less the huge page pools, never
// below zero. The eviction thresholds are not taken out: they are kept by
// evicting, not by the cgroup. Like the kubelet's validateNodeAllocatable,
// which stops it from starting, it fails when reserved plus the hard
// eviction thresholds exceed a resource's capacity.
func (h Host) Enforced(reserved corev1.ResourceList) (corev1.ResourceList, error) {
	r, err := h.Resources(reserved)
	return r.Enforced, err
}

// NodeResources are the node's capacity, allocatable (what pods are
// admitted against) and what is enforced on the pods' top cgroup.
type NodeResources struct {
	Capacity, Allocatable, Enforced corev1.ResourceList
}

// Resources is Capacity, Allocatable and Enforced from one read of the
// machine; it fails as Enforced does.
func (h Host) Resources(reserved corev1.ResourceList) (NodeResources, error) {
	capacity, huge, err := h.capacityAndHugePages()
	if err != nil {
		return NodeResources{}, err
	}
	eviction := h.evictionReservation(capacity)
	if err := validateReserved(capacity, reserved, eviction); err != nil {
		return NodeResources{}, err
	}
	enforced := corev1.ResourceList{}
	for name, q := range lessReserved(capacity, huge, reserved) {
		if name == corev1.ResourceCPU || name == corev1.ResourceMemory {
			enforced[name] = q
		}
	}
	return NodeResources{Capacity: capacity, Allocatable: allocatable(capacity, reserved, huge, eviction), Enforced: enforced}, nil
}

// validateReserved refuses a reservation (reserved plus the hard eviction
// thresholds) larger than the capacity of a resource the node has.
func validateReserved(capacity, reserved, eviction corev1.ResourceList) error {
	var bad []string
	for name, c := range capacity {
		r, e := reserved[name], eviction[name]
		want := r.DeepCopy()
		want.Add(e)
		if want.Cmp(c) <= 0 {
			continue
		}
		msg := fmt.Sprintf("%s %s", name, r.String())
		if !e.IsZero() {
			msg += fmt.Sprintf(" + %s eviction threshold", e.String())
		}
		bad = append(bad, msg+fmt.Sprintf(" > capacity %s", c.String()))
	}
	if len(bad) > 0 {
		slices.Sort(bad)
		return fmt.Errorf("systemReserved: more than the node has: %s", strings.Join(bad, ", "))
	}
	return nil
}

// hugePages is the memory the huge page pools hold (cadvisor's hugepages
// capacity, which the kubelet takes out of allocatable memory): meminfo's
// Hugetlb (every page size), else HugePages_Total × Hugepagesize.
func hugePages(meminfo []byte) int64 {
	fields := map[string]int64{}
	for line := range strings.Lines(string(meminfo)) {
		key, rest, ok := strings.Cut(line, ":")
		f := strings.Fields(rest)
		if !ok || len(f) == 0 {
			continue
		}
		v, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			continue
		}
		if len(f) > 1 && strings.EqualFold(f[1], "kB") {
			v *= 1024
		}
		fields[key] = v
	}
	if v, ok := fields["Hugetlb"]; ok {
		return v
	}
	return fields["HugePages_Total"] * fields["Hugepagesize"]
}
