package state

import (
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	"k8s.io/apimachinery/pkg/types"
)

func TestLogRemovals(t *testing.T) {
	db := openTest(t)
	at := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	for _, uid := range []string{"u2", "u1"} {
		if err := db.PutLogRemoval(LogRemoval{UID: types.UID(uid), Since: at}); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.PutLogRemoval(LogRemoval{}); err == nil {
		t.Fatal("a record without a UID was stored")
	}
	got, err := db.ListLogRemovals()
	if err != nil || len(got) != 2 || got[0].UID != "u1" || got[1].UID != "u2" || !got[0].Since.Equal(at) {
		t.Fatalf("ListLogRemovals = %v, %v", got, err)
	}
	for _, uid := range []string{"u1", "absent"} {
		if err := db.DeleteLogRemoval(types.UID(uid)); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := db.ListLogRemovals(); err != nil || len(got) != 1 || got[0].UID != "u2" {
		t.Fatalf("after delete: %v, %v", got, err)
	}
}

// A v4 file migrates with its records kept and no log removal pending.
func TestMigrateV4ToV5(t *testing.T) {
	db := openAtVersion(t, 4, func(tx *bolt.Tx) error {
		return (&Tx{tx: tx}).PutWorker(WorkerRecord{UID: "w", FullName: "default/a", Phase: PhaseTerminated})
	})
	defer db.Close()
	if ws, _ := db.ListWorkers(); len(ws) != 1 || ws[0].UID != "w" {
		t.Fatalf("workers after migration: %v", ws)
	}
	if rs, err := db.ListLogRemovals(); err != nil || len(rs) != 0 {
		t.Fatalf("log removals after migration: %v, %v", rs, err)
	}
}
