package allocation

import (
	"errors"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/kubelet/resize"
	"github.com/podhost/podhost/internal/model/records"
)

type fakeStore struct {
	mu     sync.Mutex
	allocs map[types.UID]records.Allocation
	fail   error
}

func (s *fakeStore) PutAllocations(as []records.Allocation) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return s.fail
	}
	for _, a := range as {
		s.allocs[a.UID] = a
	}
	return nil
}

func (s *fakeStore) ListAllocations() ([]records.Allocation, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []records.Allocation
	for _, a := range s.allocs {
		out = append(out, a)
	}
	return out, nil
}

func (s *fakeStore) DeleteAllocation(uid types.UID) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.allocs, uid)
	return nil
}

func (s *fakeStore) memory(uid types.UID) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.allocs[uid].Containers["c"]
	return c.Limits.Memory().String()
}

type fakeEvents struct {
	mu      sync.Mutex
	reasons []string
}

func (e *fakeEvents) Event(_ types.UID, _, reason, message string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.reasons = append(e.reasons, reason+": "+message)
}

func (e *fakeEvents) count() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.reasons)
}

// pod is a Guaranteed one-container pod.
func pod(uid, cpu, mem string) *corev1.Pod {
	p := &corev1.Pod{}
	p.Name, p.Namespace, p.UID = uid, "default", types.UID(uid)
	l := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
	p.Spec.Containers = []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: l.DeepCopy(), Limits: l}}}
	return p
}

func memory(p *corev1.Pod) string { return p.Spec.Containers[0].Resources.Limits.Memory().String() }

// newManager: allocatable cpu 2, memory 1Gi; active are the pods admission
// counts besides the one resized.
func newManager(active *[]*corev1.Pod) (*Manager, *fakeStore, *fakeEvents) {
	st := &fakeStore{allocs: map[types.UID]records.Allocation{}}
	ev := &fakeEvents{}
	alloc := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("1Gi")}
	m := New(st, ev, Options{Allocatable: alloc, ActivePods: func() []*corev1.Pod { return *active }})
	return m, st, ev
}

// A resize beyond allocatable is Infeasible: the worker keeps the
// allocated pod, the checkpoint stays, one event says why.
func TestAllocateInfeasible(t *testing.T) {
	var active []*corev1.Pod
	m, st, ev := newManager(&active)
	old := pod("u1", "200m", "64Mi")
	m.CheckpointNew([]*corev1.Pod{old})
	if !m.Has("u1") || st.memory("u1") != "64Mi" {
		t.Fatalf("checkpoint not written: %v", st.allocs)
	}
	next := pod("u1", "200m", "2Gi")
	for range 2 {
		got := m.Allocate(next)
		if memory(got) != "64Mi" || got == next {
			t.Fatalf("worker's pod memory %s, want the allocated 64Mi", memory(got))
		}
		if r, msg := resize.Pending(got); r != corev1.PodReasonInfeasible || !strings.HasPrefix(msg, "Node didn't have enough capacity: memory") {
			t.Fatalf("pending %q %q", r, msg)
		}
		if m.WorkerPod(next) != got {
			t.Fatal("WorkerPod is not the pod Allocate returned")
		}
	}
	if ev.count() != 1 || st.memory("u1") != "64Mi" {
		t.Fatalf("%d events (want 1), checkpoint %s (want 64Mi)", ev.count(), st.memory("u1"))
	}
}

// A resize that does not fit next to the active pods is Deferred, listed
// by Deferred, and allocated (checkpoint first) once it fits.
func TestAllocateDeferredUntilItFits(t *testing.T) {
	other := pod("u2", "1", "512Mi")
	active := []*corev1.Pod{other}
	m, st, _ := newManager(&active)
	m.CheckpointNew([]*corev1.Pod{pod("u1", "500m", "256Mi")})
	next := pod("u1", "500m", "768Mi")
	if r, _ := resize.Pending(m.Allocate(next)); r != corev1.PodReasonDeferred {
		t.Fatalf("pending %q, want Deferred", r)
	}
	if d := m.Deferred(); len(d) != 1 || d[0] != "u1" {
		t.Fatalf("Deferred() = %v", d)
	}
	active = nil
	if got := m.Allocate(next); got != next || st.memory("u1") != "768Mi" || len(m.Deferred()) != 0 {
		t.Fatalf("after the other pod left: worker's %s, checkpoint %s, deferred %v", memory(got), st.memory("u1"), m.Deferred())
	}
}

// A checkpoint that cannot be written defers the resize: the cgroups are
// never changed ahead of the checkpoint.
func TestAllocateCheckpointFailureDefers(t *testing.T) {
	var active []*corev1.Pod
	m, st, _ := newManager(&active)
	m.CheckpointNew([]*corev1.Pod{pod("u1", "200m", "64Mi")})
	st.fail = errors.New("disk full")
	r, msg := resize.Pending(m.Allocate(pod("u1", "200m", "128Mi")))
	if r != corev1.PodReasonDeferred || msg != "allocation checkpoint: disk full" {
		t.Fatalf("pending %q %q", r, msg)
	}
}

// Load reads the checkpoints written before a restart; Remove deletes one.
func TestLoadAndRemove(t *testing.T) {
	var active []*corev1.Pod
	m, st, _ := newManager(&active)
	st.allocs["u1"] = resize.Checkpoint(pod("u1", "200m", "64Mi"))
	m.Load()
	if !m.Has("u1") {
		t.Fatal("checkpoint not loaded")
	}
	m.CheckpointNew([]*corev1.Pod{pod("u1", "200m", "128Mi")}) // admitted before: its checkpoint wins
	if st.memory("u1") != "64Mi" {
		t.Fatalf("checkpoint rewritten to %s", st.memory("u1"))
	}
	m.Remove("u1")
	if _, ok := st.allocs["u1"]; ok || m.Has("u1") {
		t.Fatal("checkpoint kept after Remove")
	}
}

// The manager's API readers (WorkerPod through its active pods) run beside
// the sync loop's Allocate.
func TestConcurrentUse(t *testing.T) {
	var active []*corev1.Pod
	m, _, _ := newManager(&active)
	pods := []*corev1.Pod{pod("a", "100m", "64Mi"), pod("b", "100m", "64Mi")}
	m.CheckpointNew(pods)
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			for j := range 50 {
				p := pod(string(pods[i%2].UID), "100m", []string{"64Mi", "96Mi", "2Gi"}[j%3])
				m.WorkerPod(m.Allocate(p))
				m.Deferred()
				m.Has(p.UID)
			}
		})
	}
	wg.Wait()
}
