package status

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/model/records"
)

func reasons(t *testing.T, m *Manager, uid types.UID) []string {
	t.Helper()
	evs, err := m.Events(uid)
	if err != nil {
		t.Fatal(err)
	}
	out := []string{}
	for _, e := range evs {
		out = append(out, e.Reason)
	}
	return out
}

func (s *memStore) stored(uid types.UID) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.events[uid])
}

// Recording never writes: the event shows at once (from the queue) and is
// stored once by the next flush.
func TestEventsQueuedThenStoredOnce(t *testing.T) {
	st := newMemStore()
	m := NewManager(st, ManagerOptions{})
	m.Event("a", "Normal", "Pulled", "")
	m.Event("b", "Normal", "Other", "")
	m.Event("a", "Normal", "Started", "")
	if st.stored("a") != 0 {
		t.Fatal("Event wrote to the store; want it queued")
	}
	want := []string{"Pulled", "Started"}
	if got := reasons(t, m, "a"); !reflect.DeepEqual(got, want) {
		t.Fatalf("queued: %v, want %v", got, want)
	}
	m.Flush()
	if got := reasons(t, m, "a"); !reflect.DeepEqual(got, want) || st.stored("a") != 2 {
		t.Fatalf("after flush: %v (%d stored), want %v stored once", got, st.stored("a"), want)
	}
}

// A failed write keeps the events, in order, ahead of newer ones.
func TestEventsKeptAfterFailedWrite(t *testing.T) {
	st := newMemStore()
	m := NewManager(st, ManagerOptions{})
	st.failEvents = true
	m.Event("a", "Normal", "One", "")
	m.Flush()
	m.Event("a", "Normal", "Two", "")
	st.failEvents = false
	m.Flush()
	if got := reasons(t, m, "a"); !reflect.DeepEqual(got, []string{"One", "Two"}) || st.stored("a") != 2 {
		t.Fatalf("%v (%d stored), want One Two stored", got, st.stored("a"))
	}
}

// Run writes the queue as soon as an event is recorded, not at the next
// status flush.
func TestRunWritesEventsPromptly(t *testing.T) {
	st := newMemStore()
	m := NewManager(st, ManagerOptions{FlushPeriod: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { m.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	m.Event("a", "Normal", "Started", "")
	deadline := time.Now().Add(10 * time.Second)
	for st.stored("a") != 1 {
		if time.Now().After(deadline) {
			t.Fatal("event not written while Run runs")
		}
		time.Sleep(time.Millisecond)
	}
}

// A read never shows more than the store keeps per pod.
func TestEventsReadCapped(t *testing.T) {
	st := newMemStore()
	m := NewManager(st, ManagerOptions{})
	for i := range records.MaxEventsPerPod + 5 {
		m.Event("a", "Normal", fmt.Sprint(i), "")
	}
	got := reasons(t, m, "a")
	if len(got) != records.MaxEventsPerPod || got[len(got)-1] != fmt.Sprint(records.MaxEventsPerPod+4) {
		t.Fatalf("%d events, last %s", len(got), got[len(got)-1])
	}
}

// A status only semantically equal to the kept one (a time read back from
// state.db in another location) leaves the kept one in place: watches,
// which compare exactly, see no change.
func TestEqualStatusKeepsTheStoredOne(t *testing.T) {
	m := NewManager(newMemStore(), ManagerOptions{})
	a := mgrPod("a")
	m.AddPod(a)
	at := time.Date(2026, 11, 24, 4, 0, 0, 0, time.UTC)
	first := corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &metav1.Time{Time: at}}
	m.SetStatus(a, first)
	m.SetStatus(a, corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &metav1.Time{Time: at.In(time.FixedZone("X", 3600))}})
	got, _ := m.Status(a.UID)
	if !reflect.DeepEqual(got, first) {
		t.Fatalf("kept %v, want the first status unchanged", got.StartTime)
	}
}

// A status's revision changes exactly when the status does (the API keeps
// a pod's object until then).
func TestRevisionFollowsStatusChanges(t *testing.T) {
	m := NewManager(newMemStore(), ManagerOptions{})
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a", UID: "a"}}
	m.AddPod(pod)
	if r := m.Revision("a"); r != 0 {
		t.Fatalf("revision before any status = %d, want 0", r)
	}
	m.SetStatus(pod, corev1.PodStatus{Phase: corev1.PodPending})
	r1 := m.Revision("a")
	m.SetStatus(pod, corev1.PodStatus{Phase: corev1.PodPending})
	if r := m.Revision("a"); r1 == 0 || r != r1 {
		t.Fatalf("revisions %d then %d for an equal status, want the same non-zero", r1, r)
	}
	m.SetStatus(pod, corev1.PodStatus{Phase: corev1.PodRunning})
	st, r2, ok := m.StatusRevision("a")
	if !ok || r2 == r1 || st.Phase != corev1.PodRunning || m.Revision("a") != r2 {
		t.Fatalf("after a change: %s rev %d (was %d), %v", st.Phase, r2, r1, ok)
	}
	m.RemovePod("a")
	if _, r, ok := m.StatusRevision("a"); ok || r != 0 {
		t.Fatalf("removed pod: rev %d, %v", r, ok)
	}
}

// A tracked pod's events are stored under its namespace and name (so they
// are listed under it after it is deleted); repeats read back aggregated,
// queued or stored.
func TestEventsNamedAndAggregated(t *testing.T) {
	st := newMemStore()
	m := NewManager(st, ManagerOptions{})
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "infra", Name: "web", UID: "w"}}
	m.AddPod(pod)
	for range 3 {
		m.Event("w", "Warning", "Unhealthy", "probe failed")
	}
	evs, err := m.Events("w")
	if err != nil || len(evs) != 1 || evs[0].Count != 3 {
		t.Fatalf("queued: %+v, %v; want one event x3", evs, err)
	}
	m.Flush()
	if st.names["w"] != "infra/web" {
		t.Fatalf("stored under %q, want infra/web", st.names["w"])
	}
}
