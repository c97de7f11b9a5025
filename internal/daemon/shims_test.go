package daemon

import (
	"path/filepath"
	"testing"

	"github.com/podhost/podhost/internal/host/shimgroup"
	"github.com/podhost/podhost/internal/host/state"
	"github.com/podhost/podhost/internal/model/records"
)

// The shim groups of the sandboxes recorded before a start are learned from
// their records: a new sandbox joins a group with room, and records from
// before shim groups (no group: their own shim) count for none.
func TestShimGroupsLearnTheRecords(t *testing.T) {
	db, err := state.Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, r := range []records.SandboxRecord{
		{ID: "a", PodUID: "uid-a", ShimGroup: shimgroup.Prefix + "3"},
		{ID: "legacy", PodUID: "uid-l"},
	} {
		if err := db.PutSandbox(r); err != nil {
			t.Fatal(err)
		}
	}
	g, err := shimGroups(db, 2)
	if err != nil {
		t.Fatal(err)
	}
	if got := g.Assign("new"); got != shimgroup.Prefix+"3" {
		t.Fatalf("new sandbox in %q, want the recorded group with room %q", got, shimgroup.Prefix+"3")
	}
	if got := g.Assign("next"); got != shimgroup.Prefix+"next" {
		t.Fatalf("next sandbox in %q, want a new group %q (group 3 is full)", got, shimgroup.Prefix+"next")
	}
}
