package daemon

import (
	"path/filepath"
	"testing"

	"github.com/podhost/podhost/internal/host/state"
	"github.com/podhost/podhost/internal/kubelet/status"
)

// A pod's events, stored or still queued when it is purged, outlive it
// (as the API server keeps a deleted pod's events): the purge leaves them,
// ExpireEvents removes them an hour after the last one.
func TestPurgeKeepsEvents(t *testing.T) {
	db, err := state.Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	st := status.NewManager(db, status.ManagerOptions{})
	st.Event("gone", "Warning", "Failed", "refused")
	st.Flush()
	st.Event("gone", "Normal", "Killing", "Stopping container c")
	if err := db.PurgePod("gone"); err != nil {
		t.Fatal(err)
	}
	st.Flush()
	gone, err := db.Events("gone")
	if err != nil || len(gone) != 2 {
		t.Fatalf("events of the purged pod: %+v, %v; want both", gone, err)
	}
}
