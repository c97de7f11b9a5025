// Package admission decides whether a pod fits on this machine, like the
// kubelet's predicate admit handler: resources requested by the admitted
// pods plus this one against the node's allocatable, then host ports.
// Admit is pure; NodeAllocatable reads /proc/meminfo and the CPU count
// (allocatable.go: the kubelet's reservations, ephemeral-storage).
package admission

import (
	"bufio"
	"bytes"
	"fmt"
	"runtime"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/podhost/podhost/internal/model/qos"
)

// DefaultMaxPods is the kubelet's default pod capacity.
const DefaultMaxPods = 110

// The kubelet's rejection of a pod whose host ports are taken
// (lifecycle/predicate.go Admit: a PredicateFailureError of the
// scheduler's NodePorts plugin, reason its name, message its Error()).
// Resource rejections are "OutOf<resource>" (insufficient).
const (
	ReasonNodePorts  = "NodePorts"
	MessageNodePorts = "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports"
)

// Result is an admission decision. Reason and Message are set when the pod
// is rejected; the status shows them as the kubelet does (phase Failed,
// message prefixed with "Pod was rejected: ").
type Result struct {
	Admit           bool
	Reason, Message string
}

// Host reads the machine's capacity. Its zero value reads the real machine;
// tests inject the readers.
type Host struct {
	NumCPU  func() int             // default runtime.NumCPU
	MemInfo func() ([]byte, error) // default reads /proc/meminfo
	MaxPods int64                  // default DefaultMaxPods
	// RootDir's filesystem is the ephemeral-storage capacity (the
	// kubelet's --root-dir; podhost's state dir); "": not tracked.
	RootDir string
	StatFS  func(path string) (int64, error) // default statfs: the filesystem's size in bytes
	// EvictionReservation is what the hard eviction thresholds keep out of
	// allocatable for a capacity (eviction.Reservation of the configured
	// thresholds); nil: the kubelet's defaults (evictionReservation).
	EvictionReservation func(capacity corev1.ResourceList) corev1.ResourceList
}

// NodeAllocatable is the real machine's capacity minus reserved, with
// maxPods pods (0: DefaultMaxPods).
func NodeAllocatable(reserved corev1.ResourceList, maxPods int64) (corev1.ResourceList, error) {
	return Host{MaxPods: maxPods}.Allocatable(reserved)
}

// Capacity is cpu (cores), memory (MemTotal), pods and, with RootDir,
// ephemeral-storage (the size of its filesystem).
func (h Host) Capacity() (corev1.ResourceList, error) {
	numCPU, maxPods := h.NumCPU, h.MaxPods
	if numCPU == nil {
		numCPU = runtime.NumCPU
	}
	if maxPods == 0 {
		maxPods = DefaultMaxPods
	}
	data, err := h.readMemInfo()
	if err != nil {
		return nil, err
	}
	mem, err := memTotal(data)
	if err != nil {
		return nil, err
	}
	return h.withEphemeralStorage(corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewQuantity(int64(numCPU()), resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(mem, resource.BinarySI),
		corev1.ResourcePods:   *resource.NewQuantity(maxPods, resource.DecimalSI),
	})
}

// Allocatable is Capacity minus what the kubelet reserves (allocatable.go:
// reserved, the hard eviction thresholds, huge pages), never below
// zero.
func (h Host) Allocatable(reserved corev1.ResourceList) (corev1.ResourceList, error) {
	capacity, huge, err := h.capacityAndHugePages()
	if err != nil {
		return nil, err
	}
	return allocatable(capacity, reserved, huge, h.evictionReservation(capacity)), nil
}

// capacityAndHugePages is Capacity and the bytes the huge page pools hold.
func (h Host) capacityAndHugePages() (corev1.ResourceList, int64, error) {
	capacity, err := h.Capacity()
	if err != nil {
		return nil, 0, err
	}
	data, err := h.readMemInfo()
	if err != nil {
		return nil, 0, err
	}
	return capacity, hugePages(data), nil
}

// memTotal parses "MemTotal: <n> kB" into bytes.
func memTotal(data []byte) (int64, error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			break
		}
		v, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("meminfo: bad MemTotal %q: %w", rest, err)
		}
		if len(fields) > 1 && strings.EqualFold(fields[1], "kB") {
			v *= 1024
		}
		return v, nil
	}
	return 0, fmt.Errorf("meminfo: no MemTotal")
}

// Admit checks the pod against allocatable given the pods already admitted
// (a pod with the same UID among them is ignored, and so is a finished one:
// Status.Phase Succeeded or Failed holds no resources). The first failure wins,
// in the kubelet's order: pod count, cpu, memory, ephemeral-storage, other
// resources, then host ports.
func Admit(pod *corev1.Pod, allocatable corev1.ResourceList, admitted []*corev1.Pod) Result {
	others := make([]*corev1.Pod, 0, len(admitted))
	for _, p := range admitted {
		if p != nil && p.UID != pod.UID && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			others = append(others, p)
		}
	}
	if r := fitsResources(pod, allocatable, others); !r.Admit {
		return r
	}
	return fitsHostPorts(pod, others)
}

func fitsResources(pod *corev1.Pod, allocatable corev1.ResourceList, others []*corev1.Pod) Result {
	if maxPods, ok := allocatable[corev1.ResourcePods]; ok && int64(len(others))+1 > maxPods.Value() {
		return insufficient(corev1.ResourcePods, 1, int64(len(others)), maxPods.Value())
	}
	want := qos.PodRequests(pod)
	used := corev1.ResourceList{}
	for _, p := range others {
		for name, q := range qos.PodRequests(p) {
			sum := q.DeepCopy()
			if prev, ok := used[name]; ok {
				sum.Add(prev)
			}
			used[name] = sum
		}
	}
	for _, name := range checkOrder(want) {
		if name == corev1.ResourceEphemeralStorage {
			if _, ok := allocatable[name]; !ok {
				continue // capacity not tracked
			}
		}
		req, use, capacity := amount(name, want), amount(name, used), amount(name, allocatable)
		if req > 0 && req > capacity-use {
			return insufficient(name, req, use, capacity)
		}
	}
	return Result{Admit: true}
}

// checkOrder lists the requested resources: cpu, memory, ephemeral-storage,
// then the others by name.
func checkOrder(want corev1.ResourceList) []corev1.ResourceName {
	order := []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage}
	var rest []corev1.ResourceName
	for name := range want {
		if name != corev1.ResourceCPU && name != corev1.ResourceMemory && name != corev1.ResourceEphemeralStorage {
			rest = append(rest, name)
		}
	}
	sort.Slice(rest, func(i, j int) bool { return rest[i] < rest[j] })
	return append(order, rest...)
}

// amount is millicores for cpu, the plain value otherwise.
func amount(name corev1.ResourceName, list corev1.ResourceList) int64 {
	q, ok := list[name]
	if !ok {
		return 0
	}
	if name == corev1.ResourceCPU {
		return q.MilliValue()
	}
	return q.Value()
}

func insufficient(name corev1.ResourceName, requested, used, capacity int64) Result {
	return Result{
		Reason: "OutOf" + string(name),
		Message: fmt.Sprintf("Node didn't have enough resource: %s, requested: %d, used: %d, capacity: %d",
			name, requested, used, capacity),
	}
}

// hostPort is one port a pod binds on the host.
type hostPort struct {
	ip, protocol string
	port         int32
}

func fitsHostPorts(pod *corev1.Pod, others []*corev1.Pod) Result {
	wanted := hostPorts(pod)
	if len(wanted) == 0 {
		return Result{Admit: true}
	}
	for _, p := range others {
		for _, have := range hostPorts(p) {
			for _, w := range wanted {
				if conflicts(w, have) {
					return Result{Reason: ReasonNodePorts, Message: MessageNodePorts}
				}
			}
		}
	}
	return Result{Admit: true}
}

// hostPorts lists the host ports the scheduler's GetHostPorts counts (app
// containers and native sidecars: a run-to-completion init container holds
// none), with HostPortInfo's sanitize defaults: protocol TCP, host IP
// 0.0.0.0; a hostNetwork port without a host port has the container port,
// as the API's defaulting sets it.
func hostPorts(pod *corev1.Pod) []hostPort {
	var out []hostPort
	for i := range pod.Spec.InitContainers {
		if isSidecar(&pod.Spec.InitContainers[i]) {
			out = appendHostPorts(out, pod.Spec.InitContainers[i].Ports, pod.Spec.HostNetwork)
		}
	}
	for i := range pod.Spec.Containers {
		out = appendHostPorts(out, pod.Spec.Containers[i].Ports, pod.Spec.HostNetwork)
	}
	return out
}

func isSidecar(c *corev1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

func appendHostPorts(out []hostPort, ports []corev1.ContainerPort, hostNetwork bool) []hostPort {
	for _, p := range ports {
		port := p.HostPort
		if port == 0 && hostNetwork {
			port = p.ContainerPort
		}
		if port <= 0 {
			continue
		}
		hp := hostPort{ip: p.HostIP, protocol: string(p.Protocol), port: port}
		if hp.ip == "" {
			hp.ip = bindAll
		}
		if hp.protocol == "" {
			hp.protocol = string(corev1.ProtocolTCP)
		}
		out = append(out, hp)
	}
	return out
}

// bindAll is HostPortInfo's DefaultBindAllHostIP, its only wildcard: "::"
// is an address like any other there.
const bindAll = "0.0.0.0"

// conflicts is HostPortInfo.CheckConflict: same protocol and port, and the
// same address or 0.0.0.0 on either side.
func conflicts(a, b hostPort) bool {
	if a.protocol != b.protocol || a.port != b.port {
		return false
	}
	return a.ip == b.ip || a.ip == bindAll || b.ip == bindAll
}
