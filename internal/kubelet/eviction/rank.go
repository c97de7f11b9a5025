package eviction

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	resourcehelper "k8s.io/component-helpers/resource"
)

// Disk is the local storage one container or volume uses.
type Disk struct{ Bytes, Inodes int64 }

// ContainerUsage is one container's measured use.
type ContainerUsage struct {
	Memory int64 // working set, bytes
	Rootfs Disk  // the writable layer (the container's snapshot)
	Logs   Disk  // its log files
}

// PodUsage is one pod's measured use; a pod without an entry in Usage was
// not measured (the kubelet ranks those first).
type PodUsage struct {
	Memory     int64 // the pod cgroup's working set
	Containers map[string]ContainerUsage
	// Volumes: the local ephemeral volumes (emptyDir on disk) by name.
	Volumes map[string]Disk
}

// Usage is the pods' measured use by UID.
type Usage map[types.UID]*PodUsage

// SystemCriticalPriority is the priority from which a pod is critical
// (scheduling.SystemCriticalPriority).
const SystemCriticalPriority = 2000000000

// The built-in priority classes' values, for pods that name the class but
// carry no priority (no admission filled it in on a single node).
var classPriority = map[string]int32{"system-node-critical": 2000001000, "system-cluster-critical": 2000000000}

// Priority is the pod's priority: spec.priority, else its built-in class's, else 0.
func Priority(pod *corev1.Pod) int32 {
	if pod.Spec.Priority != nil {
		return *pod.Spec.Priority
	}
	return classPriority[pod.Spec.PriorityClassName]
}

// IsCritical: the kubelet never evicts such a pod (system-node-critical,
// system-cluster-critical, or a priority >= SystemCriticalPriority).
func IsCritical(pod *corev1.Pod) bool {
	return Priority(pod) >= SystemCriticalPriority
}

// diskMeasure says what of a pod counts for a disk signal.
type diskMeasure struct {
	rootfs, logs, volumes bool
	inodes                bool
}

// measureFor is what the kubelet measures for a disk signal: with a
// dedicated image filesystem, nodefs counts logs and volumes and imagefs
// the writable layers; on one filesystem both count everything.
func measureFor(s Signal, dedicatedImageFs bool) diskMeasure {
	m := diskMeasure{rootfs: true, logs: true, volumes: true, inodes: signalResource[s] == resourceInodes}
	if dedicatedImageFs {
		image := s == SignalImageFsAvailable || s == SignalImageFsInodesFree
		m.rootfs, m.logs, m.volumes = image, !image, !image
	}
	return m
}

func (m diskMeasure) pod(u *PodUsage) int64 {
	var n int64
	pick := func(d Disk) int64 {
		if m.inodes {
			return d.Inodes
		}
		return d.Bytes
	}
	for _, c := range u.Containers {
		if m.rootfs {
			n += pick(c.Rootfs)
		}
		if m.logs {
			n += pick(c.Logs)
		}
	}
	if m.volumes {
		for _, v := range u.Volumes {
			n += pick(v)
		}
	}
	return n
}

// podRequest is the pod's request of a resource (the kubelet's
// GetResourceRequestQuantity: containers, init containers, overhead).
func podRequest(pod *corev1.Pod, r corev1.ResourceName) int64 {
	if r == resourceInodes {
		return 0
	}
	q := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})[r]
	return q.Value()
}

// rankEntry is what one pod is ranked by.
type rankEntry struct {
	pod      *corev1.Pod
	found    bool
	exceeds  bool
	priority int32
	above    int64 // usage above the request
}

// rank orders pods for eviction for a signal as the kubelet does: pods
// without stats first, then those whose usage exceeds their request, then
// lower priority, then larger usage above the request.
func rank(pods []*corev1.Pod, usage Usage, s Signal, dedicatedImageFs bool) []*corev1.Pod {
	r := signalResource[s]
	dm := measureFor(s, dedicatedImageFs)
	entries := make([]rankEntry, len(pods))
	for i, pod := range pods {
		e := rankEntry{pod: pod, priority: Priority(pod)}
		if u := usage[pod.UID]; u != nil {
			used := u.Memory
			if r != corev1.ResourceMemory {
				used = dm.pod(u)
			}
			req := podRequest(pod, r)
			e.found, e.exceeds, e.above = true, used > req, used-req
		}
		entries[i] = e
	}
	sort.SliceStable(entries, func(i, j int) bool {
		a, b := entries[i], entries[j]
		switch {
		case a.found != b.found:
			return !a.found
		case a.exceeds != b.exceeds:
			return a.exceeds
		case a.priority != b.priority:
			return a.priority < b.priority
		}
		return a.above > b.above
	})
	out := make([]*corev1.Pod, len(entries))
	for i, e := range entries {
		out[i] = e.pod
	}
	return out
}

// The kubelet's message parts (pkg/kubelet/eviction/helpers.go).
const (
	// Reason is the status reason and event reason of an evicted pod.
	Reason                 = "Evicted"
	nodeLowMessageFmt      = "The node was low on resource: %v. "
	thresholdMetMessageFmt = "Threshold quantity: %v, available: %v. "
	containerMessageFmt    = "Container %s was using %s, request is %s, has larger consumption of %v. "
)

// pressureMessage is the kubelet's evictionMessage: the resource, the
// threshold and what was available, and each container using more than it
// requested.
func pressureMessage(pod *corev1.Pod, t Threshold, p Pressure, u *PodUsage, dedicatedImageFs bool) string {
	r := signalResource[t.Signal]
	msg := fmt.Sprintf(nodeLowMessageFmt, r)
	if o, ok := p.obs[t.Signal]; ok {
		format := resource.BinarySI
		if r == resourceInodes {
			format = resource.DecimalSI
		}
		msg += fmt.Sprintf(thresholdMetMessageFmt, resource.NewQuantity(t.value(o.Capacity), format), resource.NewQuantity(o.Available, format))
	}
	if u == nil || r == resourceInodes {
		return msg
	}
	for _, c := range pod.Spec.Containers {
		cu, ok := u.Containers[c.Name]
		if !ok {
			continue
		}
		used := cu.Memory
		if r == corev1.ResourceEphemeralStorage {
			used = cu.Rootfs.Bytes + cu.Logs.Bytes
		}
		req := c.Resources.Requests[r]
		if used > req.Value() {
			msg += fmt.Sprintf(containerMessageFmt, c.Name, resource.NewQuantity(used, resource.BinarySI), req.String(), r)
		}
	}
	return msg
}
