package state

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/podhost/podhost/internal/model/records"
)

func TestRolloutRoundTrip(t *testing.T) {
	db, err := Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	at := time.Unix(1700000000, 0).UTC()
	r := records.RolloutRecord{FullName: "default/web",
		Revisions: []records.Revision{{Number: 1, UID: "u1", Hash: "h1", Outcome: "Ready", Seen: at, Pod: []byte(`{"metadata":{"name":"web"}}`)}},
		Override:  &records.Override{SourceUID: "u2", ToUID: "u1", Reason: "ImagePullBackOff", At: at}}
	if err := db.PutRollout(r); err != nil {
		t.Fatal(err)
	}
	if err := db.PutRollout(records.RolloutRecord{}); err == nil {
		t.Fatal("PutRollout with an empty name: want an error")
	}
	got, err := db.ListRollouts()
	if err != nil || len(got) != 1 {
		t.Fatalf("ListRollouts = %v, %v; want one record", got, err)
	}
	g := got[0]
	if g.FullName != r.FullName || g.Override == nil || g.Override.ToUID != "u1" || g.Revisions[0].Hash != "h1" ||
		string(g.Revisions[0].Pod) != `{"metadata":{"name":"web"}}` || !g.Revisions[0].Seen.Equal(at) {
		t.Fatalf("round trip: got %+v", g)
	}
	if err := db.DeleteRollout("default/web"); err != nil {
		t.Fatal(err)
	}
	if got, _ := db.ListRollouts(); len(got) != 0 {
		t.Fatalf("after delete: %v", got)
	}
}
