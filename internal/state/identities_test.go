package state

import (
	"path/filepath"
	"slices"
	"testing"

	bolt "go.etcd.io/bbolt"
)

func TestIdentities(t *testing.T) {
	db := openTest(t)
	a := IdentityRecord{FullName: "default/a", IdentityHash: "i1", UID: "uid-a"}
	b := IdentityRecord{FullName: "default/b", IdentityHash: "i2", UID: "uid-b"}
	if err := db.UpdateIdentities([]IdentityRecord{a, b}, nil); err != nil {
		t.Fatal(err)
	}
	if got, err := db.ListIdentities(); err != nil || !slices.Equal(got, []IdentityRecord{a, b}) {
		t.Fatalf("ListIdentities = %v, %v", got, err)
	}
	a2 := IdentityRecord{FullName: "default/a", IdentityHash: "i3", UID: "uid-a2"}
	if err := db.UpdateIdentities([]IdentityRecord{a2}, []string{"default/b", "default/absent"}); err != nil {
		t.Fatal(err)
	}
	if got, err := db.ListIdentities(); err != nil || !slices.Equal(got, []IdentityRecord{a2}) {
		t.Fatalf("after update: %v, %v", got, err)
	}
	if err := db.UpdateIdentities([]IdentityRecord{{UID: "x"}}, nil); err == nil {
		t.Fatal("a record without a full name was stored")
	}
}

// A v2 file (the podhost before identity hashes) migrates with its
// allocations kept and no identity records.
func TestMigrateV2ToV3(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	bdb, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = bdb.Update(func(tx *bolt.Tx) error {
		for _, m := range migrations[:2] {
			if err := m.apply(tx); err != nil {
				return err
			}
		}
		if err := (&Tx{tx: tx}).PutAllocation(Allocation{UID: "legacy", FullName: "default/a"}); err != nil {
			return err
		}
		return putJSON(tx, bucketMeta, keySchemaVersion, 2)
	})
	if err != nil {
		t.Fatal(err)
	}
	_ = bdb.Close()
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if as, _ := db.ListAllocations(); len(as) != 1 || as[0].UID != "legacy" {
		t.Fatalf("allocations after migration: %v", as)
	}
	if ids, err := db.ListIdentities(); err != nil || len(ids) != 0 {
		t.Fatalf("identities after migration: %v, %v", ids, err)
	}
}
