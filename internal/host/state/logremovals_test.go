package state

import (
	"slices"
	"testing"

	bolt "go.etcd.io/bbolt"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/model/records"
)

func TestLogRemovals(t *testing.T) {
	db := openTest(t)
	for _, uid := range []types.UID{"u2", "u1"} {
		if err := db.PutLogRemoval(uid); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.PutLogRemoval(""); err == nil {
		t.Fatal("a record without a UID was stored")
	}
	got, err := db.ListLogRemovals()
	if err != nil || !slices.Equal(got, []types.UID{"u1", "u2"}) {
		t.Fatalf("ListLogRemovals = %v, %v", got, err)
	}
	for _, uid := range []types.UID{"u1", "absent"} {
		if err := db.DeleteLogRemoval(uid); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := db.ListLogRemovals(); err != nil || !slices.Equal(got, []types.UID{"u2"}) {
		t.Fatalf("after delete: %v, %v", got, err)
	}
}

// The key is the record: a value that is not a LogRemoval's JSON neither
// fails the list nor hides the pending removal.
func TestLogRemovalsReadKeysOnly(t *testing.T) {
	db := openTest(t)
	if err := db.PutLogRemoval("u1"); err != nil {
		t.Fatal(err)
	}
	err := db.Update(func(tx *Tx) error { return tx.tx.Bucket(bucketLogRemovals).Put([]byte("u2"), []byte("{not json")) })
	if err != nil {
		t.Fatal(err)
	}
	if got, err := db.ListLogRemovals(); err != nil || !slices.Equal(got, []types.UID{"u1", "u2"}) {
		t.Fatalf("ListLogRemovals = %v, %v", got, err)
	}
}

// A v4 file migrates with its records kept and no log removal pending.
func TestMigrateV4ToV5(t *testing.T) {
	db := openAtVersion(t, 4, func(tx *bolt.Tx) error {
		return (&Tx{tx: tx}).PutWorker(records.WorkerRecord{UID: "w", FullName: "default/a", Phase: records.PhaseTerminated})
	})
	defer db.Close()
	if ws, _ := db.ListWorkers(); len(ws) != 1 || ws[0].UID != "w" {
		t.Fatalf("workers after migration: %v", ws)
	}
	if rs, err := db.ListLogRemovals(); err != nil || len(rs) != 0 {
		t.Fatalf("log removals after migration: %v, %v", rs, err)
	}
}
