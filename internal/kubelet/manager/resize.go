package manager

// In-place resize, the manager's half (the kubelet's allocation manager):
// an update of a running pod whose containers' resources differ from its
// allocation checkpoint is admitted against allocatable with the new
// requests; admitted, the checkpoint is written first, then the worker gets
// the pod (the syncer changes the cgroups: internal/kubelet/syncer/resize.go).
// Refused, the worker keeps running the pod with its allocated resources
// and the pod carries wellknown.AnnotationResizePending (condition
// PodResizePending: Infeasible or Deferred). Deferred resizes are tried
// again at housekeeping.

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/desired/manifest"
	"github.com/podhost/podhost/internal/kubelet/admission"
	"github.com/podhost/podhost/internal/kubelet/podworkers"
	"github.com/podhost/podhost/internal/kubelet/resize"
	"github.com/podhost/podhost/internal/model/qos"
	"github.com/podhost/podhost/internal/model/records"
	"github.com/podhost/podhost/internal/model/wellknown"
)

// msgQOSChange is Kubernetes' refusal of a resize that changes the class.
const msgQOSChange = "Pod QOS Class may not change as a result of resizing"

// loadAllocations reads the allocation checkpoints (once, before the first
// snapshot is applied): the resources granted before a restart.
func (m *Manager) loadAllocations() {
	as, err := m.store.ListAllocations()
	if err != nil {
		m.log.Warn("read allocation checkpoints", "err", err)
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, a := range as {
		m.allocs[a.UID] = a
	}
}

func (m *Manager) hasAllocation(uid types.UID) bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	a, ok := m.allocs[uid]
	return ok && a.Containers != nil
}

// allocate returns the pod the worker runs: pod itself when its resources
// are (or now become) allocated, else pod with the allocated resources and
// the pending-resize annotation.
func (m *Manager) allocate(pod *corev1.Pod) *corev1.Pod {
	m.mu.RLock()
	a, ok := m.allocs[pod.UID]
	m.mu.RUnlock()
	if !ok || a.Containers == nil || sameAllocation(resize.Allocation(pod), a.Containers) {
		if !ok || a.Containers == nil {
			_ = m.checkpoint(pod) // logged; the next update writes it again
		}
		return m.setAllocated(pod, pod)
	}
	allocated := resize.WithAllocation(pod, a.Containers)
	reason, msg := m.resizeVerdict(pod, allocated)
	if reason == "" {
		if err := m.checkpoint(pod); err != nil {
			reason, msg = corev1.PodReasonDeferred, "allocation checkpoint: "+err.Error()
		}
	}
	if reason == "" {
		m.log.Info("pod resize allocated", "pod", manifest.FullName(pod), "podUID", string(pod.UID))
		return m.setAllocated(pod, pod)
	}
	if allocated.Annotations == nil {
		allocated.Annotations = map[string]string{}
	}
	allocated.Annotations[wellknown.AnnotationResizePending] = reason + ": " + msg
	if prev := m.allocatedPod(pod); prev.Annotations[wellknown.AnnotationResizePending] != allocated.Annotations[wellknown.AnnotationResizePending] {
		m.log.Warn("pod resize not allocated", "pod", manifest.FullName(pod), "podUID", string(pod.UID), "reason", reason, "message", msg)
		m.statuses.Event(pod.UID, corev1.EventTypeWarning, "ResizePending", reason+": "+msg)
	}
	return m.setAllocated(pod, allocated)
}

// resizeVerdict: "" when the new resources fit, else Infeasible (never
// fits: QoS class change, init containers, beyond the node's allocatable)
// or Deferred (does not fit next to the other pods now).
func (m *Manager) resizeVerdict(pod, allocated *corev1.Pod) (reason, msg string) {
	if qos.PodQOS(pod) != qos.PodQOS(allocated) {
		return corev1.PodReasonInfeasible, msgQOSChange
	}
	for i := range pod.Spec.InitContainers {
		if !resize.Equal(pod.Spec.InitContainers[i].Resources, allocated.Spec.InitContainers[i].Resources) {
			return corev1.PodReasonInfeasible, "resizing init containers is not supported by podhost"
		}
	}
	want := qos.PodRequests(pod)
	for _, n := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		capacity, ok := m.allocatable[n]
		if q, has := want[n]; has && ok && q.Cmp(capacity) > 0 {
			return corev1.PodReasonInfeasible, fmt.Sprintf("Node didn't have enough capacity: %s, requested: %s, capacity: %s", n, q.String(), capacity.String())
		}
	}
	if res := admission.Admit(pod, m.allocatable, m.activePods()); !res.Admit {
		return corev1.PodReasonDeferred, res.Message
	}
	return "", ""
}

// checkpoint writes pod's resources as its allocation (before any cgroup
// changes).
func (m *Manager) checkpoint(pod *corev1.Pod) error {
	a := resize.Checkpoint(pod)
	if err := m.store.PutAllocations([]records.Allocation{a}); err != nil {
		m.log.Error("checkpoint allocation", "pod", manifest.FullName(pod), "err", err)
		return err
	}
	m.mu.Lock()
	m.allocs[pod.UID] = a
	m.mu.Unlock()
	return nil
}

func (m *Manager) setAllocated(desired, worker *corev1.Pod) *corev1.Pod {
	m.mu.Lock()
	defer m.mu.Unlock()
	if worker == desired {
		delete(m.allocated, desired.UID)
	} else {
		m.allocated[desired.UID] = worker
	}
	return worker
}

// allocatedPod is the pod as its worker runs it (the allocated resources).
func (m *Manager) allocatedPod(pod *corev1.Pod) *corev1.Pod {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if p, ok := m.allocated[pod.UID]; ok {
		return p
	}
	return pod
}

// retryDeferredResizes tries Deferred resizes again (housekeeping): another
// pod may have freed resources.
func (m *Manager) retryDeferredResizes() {
	m.mu.RLock()
	var retry []*corev1.Pod
	for uid, p := range m.allocated {
		if reason, _ := resize.Pending(p); reason == corev1.PodReasonDeferred && m.desired[uid] != nil {
			retry = append(retry, m.desired[uid])
		}
	}
	m.mu.RUnlock()
	for _, p := range retry {
		if wp := m.allocate(p); wp == p {
			m.workers.UpdatePod(podworkers.UpdatePodOptions{Type: podworkers.SyncPodUpdate, Pod: wp})
		}
	}
}

func sameAllocation(a, b map[string]corev1.ResourceRequirements) bool {
	if len(a) != len(b) {
		return false
	}
	for name, r := range a {
		o, ok := b[name]
		if !ok || !resize.Equal(r, o) {
			return false
		}
	}
	return true
}
