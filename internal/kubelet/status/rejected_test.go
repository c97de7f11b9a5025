package status

import (
	"testing"
)

// A rejected pod admitted later (an edit that keeps its UID, or a podhost
// restart) is not held in the terminal phase it was rejected with: the
// rejection is dropped, in memory and when seeding from the store.
func TestAddPodDropsRejection(t *testing.T) {
	store := newMemStore()
	m := NewManager(store, ManagerOptions{})
	a := mgrPod("a")
	m.RejectPod(a, "OutOfmemory", "Node didn't have enough resource: memory")
	m.Flush()
	rev := m.Revision("a")

	next := NewManager(store, ManagerOptions{}) // after a restart
	next.AddPod(a)
	if st := next.LastStatus("a"); st != nil {
		t.Fatalf("seeded the rejection from the store: %+v", st)
	}

	m.AddPod(a) // re-admitted after an edit
	if st := m.LastStatus("a"); st != nil {
		t.Fatalf("kept the rejection: %+v", st)
	}
	if m.Revision("a") == rev || !m.IsDesired("a") {
		t.Fatalf("revision %d (was %d), desired %v", m.Revision("a"), rev, m.IsDesired("a"))
	}
}
