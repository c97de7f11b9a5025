package daemon

import (
	"path/filepath"
	"testing"

	"github.com/podhost/podhost/internal/host/state"
	"github.com/podhost/podhost/internal/kubelet/status"
)

// A pod's events still queued when it is purged are not written after the
// purge: no state.db record outlives the pod.
func TestPurgeDropsQueuedEvents(t *testing.T) {
	db, err := state.Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	st := status.NewManager(db, status.ManagerOptions{})
	st.Event("gone", "Normal", "Killing", "Stopping container c")
	st.Event("kept", "Normal", "Started", "Started container c")
	if err := (purgingStore{db, st}).PurgePod("gone"); err != nil {
		t.Fatal(err)
	}
	st.Flush()
	gone, err := db.Events("gone")
	if err != nil {
		t.Fatal(err)
	}
	kept, err := db.Events("kept")
	if err != nil {
		t.Fatal(err)
	}
	if len(gone) != 0 || len(kept) != 1 {
		t.Fatalf("stored after the purge: gone=%d kept=%d, want 0 1", len(gone), len(kept))
	}
}
