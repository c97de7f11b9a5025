package status

import (
	"errors"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/host/state"
	"github.com/podhost/podhost/internal/model/records"
)

type memStore struct {
	mu       sync.Mutex
	statuses map[types.UID]corev1.PodStatus
	events   map[types.UID][]records.Event
	names    map[types.UID]string // namespace/name the events were stored under
	failPut  bool
	puts     int
	// failEvents makes AddEvents fail.
	failEvents bool
}

func newMemStore() *memStore {
	return &memStore{statuses: map[types.UID]corev1.PodStatus{}, events: map[types.UID][]records.Event{}, names: map[types.UID]string{}}
}

func (s *memStore) PutStatuses(m map[types.UID]corev1.PodStatus) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.puts++
	if s.failPut {
		return errors.New("no space left on device")
	}
	for k, v := range m {
		s.statuses[k] = v
	}
	return nil
}

func (s *memStore) GetStatus(uid types.UID) (corev1.PodStatus, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.statuses[uid]
	if !ok {
		return st, state.ErrNotFound
	}
	return st, nil
}

func (s *memStore) AddEvents(evs []records.PodEvent) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failEvents {
		return errors.New("no space left on device")
	}
	for _, e := range evs {
		s.events[e.UID] = append(s.events[e.UID], e.Event)
		if e.Name != "" {
			s.names[e.UID] = e.Namespace + "/" + e.Name
		}
	}
	return nil
}

func (s *memStore) Events(uid types.UID) ([]records.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.events[uid], nil
}

func mgrPod(uid string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), Name: uid, Namespace: "default"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}}}
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestManagerReadyOnceFirstSnapshotSynced(t *testing.T) {
	m := NewManager(newMemStore(), ManagerOptions{})
	a, b, r := mgrPod("a"), mgrPod("b"), mgrPod("r")
	m.AddPod(a)
	m.AddPod(b)
	m.RejectPod(r, "OutOfpods", "Node didn't have enough resource: pods")
	if m.SourcesReady() {
		t.Fatal("sources ready before ExpectSynced")
	}
	m.ExpectSynced([]types.UID{a.UID, b.UID, r.UID})
	if !m.SourcesReady() {
		t.Fatal("sources not ready after ExpectSynced")
	}
	if isClosed(m.Ready()) {
		t.Fatal("ready before any sync")
	}
	m.SetStatus(a, corev1.PodStatus{Phase: corev1.PodRunning})
	if isClosed(m.Ready()) {
		t.Fatal("ready with b unsynced")
	}
	m.RemovePod(b.UID) // removed before its first sync: not waited for
	if !isClosed(m.Ready()) {
		t.Fatal("not ready once every remaining pod synced")
	}
	if st, _ := m.Status(r.UID); st.Phase != corev1.PodFailed || st.Reason != "OutOfpods" {
		t.Fatalf("rejected pod status %+v", st)
	}
	if m.IsDesired(r.UID) || !m.IsDesired(a.UID) {
		t.Fatal("desired set wrong")
	}
}

func TestManagerIgnoresUntrackedAndSeedsFromStore(t *testing.T) {
	store := newMemStore()
	store.statuses["a"] = corev1.PodStatus{Phase: corev1.PodRunning, Message: "from before the restart"}
	m := NewManager(store, ManagerOptions{})
	m.SetStatus(mgrPod("x"), corev1.PodStatus{Phase: corev1.PodRunning})
	if _, ok := m.Status("x"); ok {
		t.Fatal("status of an untracked pod kept")
	}
	m.AddPod(mgrPod("a"))
	if st := m.LastStatus("a"); st == nil || st.Message != "from before the restart" {
		t.Fatalf("seed %+v", st)
	}
}

func TestManagerFlushRetriesAfterAFailedWrite(t *testing.T) {
	store := newMemStore()
	m := NewManager(store, ManagerOptions{})
	a := mgrPod("a")
	m.AddPod(a)
	m.SetStatus(a, corev1.PodStatus{Phase: corev1.PodRunning})
	store.failPut = true
	m.Flush()
	store.failPut = false
	m.Flush()
	m.Flush() // nothing dirty: no write
	if store.puts != 2 || store.statuses["a"].Phase != corev1.PodRunning {
		t.Fatalf("puts=%d stored=%+v", store.puts, store.statuses["a"])
	}
}

// Changed is closed by a changed status, an event and a pod added or
// removed; an identical status does not signal.
func TestManagerChangedSignals(t *testing.T) {
	m := NewManager(newMemStore(), ManagerOptions{})
	a := mgrPod("a")
	steps := []struct {
		name   string
		do     func()
		signal bool
	}{
		{"add", func() { m.AddPod(a) }, true},
		{"status", func() { m.SetStatus(a, corev1.PodStatus{Phase: corev1.PodRunning}) }, true},
		{"same status", func() { m.SetStatus(a, corev1.PodStatus{Phase: corev1.PodRunning}) }, false},
		{"event", func() { m.Event(a.UID, corev1.EventTypeNormal, "Started", "Started container c") }, true},
		{"remove", func() { m.RemovePod(a.UID) }, true},
	}
	for _, s := range steps {
		ch := m.Changed()
		s.do()
		if isClosed(ch) != s.signal {
			t.Errorf("%s: signalled = %v, want %v", s.name, isClosed(ch), s.signal)
		}
	}
}

// A pod terminated by a node shutdown is Failed/Terminated with a
// DisruptionTarget condition and an event; after the reboot the next
// podhost seeds it from the store as non-terminal, so it runs again.
func TestManagerNodeShutdownIsNotFinalAcrossReboot(t *testing.T) {
	store := newMemStore()
	m := NewManager(store, ManagerOptions{})
	a := mgrPod("a")
	m.AddPod(a)
	m.SetStatus(a, corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Name: "c", RestartCount: 2}}})
	m.MarkNodeShutdown(a)
	m.SetStatus(a, corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Name: "c", RestartCount: 2}}}) // syncer, while stopping
	st := m.LastStatus("a")
	if st.Phase != corev1.PodFailed || st.Reason != ReasonNodeShutdown || st.Message != MessageNodeShutdown {
		t.Fatalf("status after MarkNodeShutdown: %s %q %q", st.Phase, st.Reason, st.Message)
	}
	if len(st.Conditions) != 1 || st.Conditions[0].Type != corev1.DisruptionTarget {
		t.Fatalf("conditions %+v, want DisruptionTarget", st.Conditions)
	}
	if evs, _ := m.Events("a"); len(evs) != 1 || evs[0].Reason != ReasonNodeShutdown {
		t.Fatalf("events %+v", evs)
	}
	m.Flush()

	next := NewManager(store, ManagerOptions{}) // podhost after the reboot
	next.AddPod(a)
	st = next.LastStatus("a")
	if st.Phase != corev1.PodPending || st.Reason != "" || len(st.Conditions) != 0 {
		t.Fatalf("seeded status after reboot: %s %q %+v, want Pending without the shutdown reason", st.Phase, st.Reason, st.Conditions)
	}
	if st.ContainerStatuses[0].RestartCount != 2 {
		t.Fatal("container statuses lost")
	}
	if got := Compute(a, Inputs{Previous: st}); got.Phase == corev1.PodFailed {
		t.Fatal("Compute keeps the pod Failed after the reboot")
	}
}

// A stopping pod (MarkTerminating) keeps a live status, not desired and
// not persisted; applied again, it starts from the status persisted before
// its removal, not from the killed run's.
func TestManagerStoppingPod(t *testing.T) {
	store := newMemStore()
	m := NewManager(store, ManagerOptions{})
	a := mgrPod("a")
	m.AddPod(a)
	m.SetStatus(a, corev1.PodStatus{Phase: corev1.PodRunning, Message: "running"})
	m.Flush()
	m.MarkTerminating("a")
	m.SetStatus(a, corev1.PodStatus{Phase: corev1.PodFailed, Message: "killed"})
	if st := m.LastStatus("a"); st == nil || st.Phase != corev1.PodFailed || m.IsDesired("a") {
		t.Fatalf("stopping: status %+v, desired %v; want the live Failed, not desired", st, m.IsDesired("a"))
	}
	m.Flush()
	if store.statuses["a"].Message != "running" {
		t.Fatalf("a stopping pod's status was persisted: %+v", store.statuses["a"])
	}
	m.AddPod(a)
	if st := m.LastStatus("a"); st == nil || st.Message != "running" || !m.IsDesired("a") {
		t.Fatalf("applied again: %+v, desired %v; want the status from before the removal", st, m.IsDesired("a"))
	}
	m.MarkTerminating("a")
	m.RemovePod("a")
	if _, ok := m.Status("a"); ok {
		t.Fatal("status kept after RemovePod")
	}
}

// A pod of the first snapshot removed before its first sync does not hold
// readiness back (with containerd down it may never sync).
func TestManagerReadyNotHeldByAStoppingPod(t *testing.T) {
	m := NewManager(newMemStore(), ManagerOptions{})
	a, b := mgrPod("a"), mgrPod("b")
	m.AddPod(a)
	m.AddPod(b)
	m.ExpectSynced([]types.UID{"a", "b"})
	m.SetStatus(a, corev1.PodStatus{Phase: corev1.PodRunning})
	if isClosed(m.Ready()) {
		t.Fatal("ready before b synced")
	}
	m.MarkTerminating("b")
	if !isClosed(m.Ready()) {
		t.Fatal("a removed pod holds readiness back")
	}
}
