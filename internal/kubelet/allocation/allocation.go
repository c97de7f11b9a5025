// Package allocation keeps what each pod was granted, as the kubelet's
// pkg/kubelet/allocation: the allocation checkpoint (the state db's
// records.Allocation, per container) is the truth of a pod's resources.
// The manager checkpoints a pod when it admits it and asks Allocate for the
// pod a worker runs at every update: an update (or, after a restart, a
// re-added pod) whose containers' cpu/memory differ from the checkpoint is
// a resize, admitted here against allocatable next to the other pods'
// *allocated* requests. Admitted, the checkpoint is written first and the
// worker gets the pod (the syncer then changes the cgroups); refused, as
// Infeasible (a QoS class change, init containers, beyond the node's
// allocatable) or Deferred (does not fit next to the other pods now;
// retried by the manager's housekeeping), the worker keeps running the pod
// with its allocated resources and the wellknown.AnnotationResizePending
// annotation (condition PodResizePending), and a ResizePending event says
// why.
//
// A Manager is safe for concurrent use: it owns its lock, and never holds
// it while it calls out (the store, ActivePods, the events).
package allocation

import (
	"fmt"
	"log/slog"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/desired/manifest"
	"github.com/podhost/podhost/internal/kubelet/admission"
	"github.com/podhost/podhost/internal/kubelet/resize"
	"github.com/podhost/podhost/internal/model/qos"
	"github.com/podhost/podhost/internal/model/records"
	"github.com/podhost/podhost/internal/model/wellknown"
)

// MsgQOSChange is Kubernetes' refusal of a resize that changes the class.
const MsgQOSChange = "Pod QOS Class may not change as a result of resizing"

// Store persists the checkpoints (*state.DB).
type Store interface {
	PutAllocations([]records.Allocation) error
	ListAllocations() ([]records.Allocation, error)
	DeleteAllocation(uid types.UID) error
}

// Events records a pod's events (*status.Manager).
type Events interface {
	Event(uid types.UID, typ, reason, message string)
}

// Options configure a Manager.
type Options struct {
	Allocatable corev1.ResourceList
	// ActivePods are the pods admission counts a resize against (their
	// allocated resources): the manager's active pods.
	ActivePods func() []*corev1.Pod
	Logger     *slog.Logger
}

// Manager holds the checkpoints and the pods workers run when a resize is
// not allocated.
type Manager struct {
	store       Store
	events      Events
	allocatable corev1.ResourceList
	activePods  func() []*corev1.Pod
	log         *slog.Logger

	mu          sync.Mutex
	checkpoints map[types.UID]records.Allocation
	workerPods  map[types.UID]*corev1.Pod // a resize not allocated: the pod its worker runs
}

// New returns a Manager with no checkpoint loaded.
func New(store Store, events Events, opts Options) *Manager {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Manager{store: store, events: events, allocatable: opts.Allocatable, activePods: opts.ActivePods, log: opts.Logger,
		checkpoints: map[types.UID]records.Allocation{}, workerPods: map[types.UID]*corev1.Pod{}}
}

// Load reads the checkpoints (once, before the first snapshot is applied):
// the resources granted before a restart.
func (m *Manager) Load() {
	as, err := m.store.ListAllocations()
	if err != nil {
		m.log.Warn("read allocation checkpoints", "err", err)
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, a := range as {
		m.checkpoints[a.UID] = a
	}
}

// Has reports whether uid has a checkpoint of its containers' resources.
func (m *Manager) Has(uid types.UID) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	a, ok := m.checkpoints[uid]
	return ok && a.Containers != nil
}

// CheckpointNew writes, in one transaction, the checkpoints of newly
// admitted pods that have none (a pod admitted before a restart keeps
// its own: Allocate then sees a resize if it changed). A failed write is
// logged; Allocate writes the pod's checkpoint again.
func (m *Manager) CheckpointNew(pods []*corev1.Pod) {
	allocs := make([]records.Allocation, 0, len(pods))
	for _, p := range pods {
		if !m.Has(p.UID) {
			allocs = append(allocs, resize.Checkpoint(p))
		}
	}
	if err := m.store.PutAllocations(allocs); err != nil {
		m.log.Error("checkpoint allocations", "err", err)
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, a := range allocs {
		m.checkpoints[a.UID] = a
	}
}

// Allocate returns the pod a worker runs: pod itself when its resources
// are (or now become) allocated, else pod with the allocated resources and
// the pending-resize annotation.
func (m *Manager) Allocate(pod *corev1.Pod) *corev1.Pod {
	m.mu.Lock()
	a, ok := m.checkpoints[pod.UID]
	m.mu.Unlock()
	if !ok || a.Containers == nil || sameAllocation(resize.Allocation(pod), a.Containers) {
		if !ok || a.Containers == nil {
			_ = m.checkpoint(pod) // logged; the next update writes it again
		}
		return m.setWorkerPod(pod, pod)
	}
	allocated := resize.WithAllocation(pod, a.Containers)
	reason, msg := m.verdict(pod, allocated)
	if reason == "" {
		if err := m.checkpoint(pod); err != nil {
			reason, msg = corev1.PodReasonDeferred, "allocation checkpoint: "+err.Error()
		}
	}
	if reason == "" {
		m.log.Info("pod resize allocated", "pod", manifest.FullName(pod), "podUID", string(pod.UID))
		return m.setWorkerPod(pod, pod)
	}
	if allocated.Annotations == nil {
		allocated.Annotations = map[string]string{}
	}
	allocated.Annotations[wellknown.AnnotationResizePending] = reason + ": " + msg
	if prev := m.WorkerPod(pod); prev.Annotations[wellknown.AnnotationResizePending] != allocated.Annotations[wellknown.AnnotationResizePending] {
		m.log.Warn("pod resize not allocated", "pod", manifest.FullName(pod), "podUID", string(pod.UID), "reason", reason, "message", msg)
		m.events.Event(pod.UID, corev1.EventTypeWarning, "ResizePending", reason+": "+msg)
	}
	return m.setWorkerPod(pod, allocated)
}

// verdict: "" when the new resources fit, else Infeasible (never fits: QoS
// class change, init containers, beyond the node's allocatable) or Deferred
// (does not fit next to the other pods now).
func (m *Manager) verdict(pod, allocated *corev1.Pod) (reason, msg string) {
	if qos.PodQOS(pod) != qos.PodQOS(allocated) {
		return corev1.PodReasonInfeasible, MsgQOSChange
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
	m.checkpoints[pod.UID] = a
	m.mu.Unlock()
	return nil
}

func (m *Manager) setWorkerPod(desired, worker *corev1.Pod) *corev1.Pod {
	m.mu.Lock()
	defer m.mu.Unlock()
	if worker == desired {
		delete(m.workerPods, desired.UID)
	} else {
		m.workerPods[desired.UID] = worker
	}
	return worker
}

// WorkerPod is pod as its worker runs it: with the allocated resources
// while a resize of it is not allocated, else pod itself.
func (m *Manager) WorkerPod(pod *corev1.Pod) *corev1.Pod {
	m.mu.Lock()
	defer m.mu.Unlock()
	if p, ok := m.workerPods[pod.UID]; ok {
		return p
	}
	return pod
}

// Deferred are the pods whose resize is Deferred: another pod may have
// freed resources since (the manager retries them at housekeeping).
func (m *Manager) Deferred() []types.UID {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []types.UID
	for uid, p := range m.workerPods {
		if reason, _ := resize.Pending(p); reason == corev1.PodReasonDeferred {
			out = append(out, uid)
		}
	}
	return out
}

// Remove forgets a removed pod and deletes its checkpoint.
func (m *Manager) Remove(uid types.UID) {
	m.mu.Lock()
	delete(m.checkpoints, uid)
	delete(m.workerPods, uid)
	m.mu.Unlock()
	if err := m.store.DeleteAllocation(uid); err != nil {
		m.log.Warn("delete allocation", "podUID", string(uid), "err", err)
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
