package state

import (
	"slices"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/podhost/podhost/internal/model/records"
)

func TestIdentities(t *testing.T) {
	db := openTest(t)
	a := records.IdentityRecord{FullName: "default/a", IdentityHash: "i1", UID: "uid-a"}
	b := records.IdentityRecord{FullName: "default/b", IdentityHash: "i2", UID: "uid-b"}
	if err := db.UpdateIdentities([]records.IdentityRecord{a, b}, nil); err != nil {
		t.Fatal(err)
	}
	if got, err := db.ListIdentities(); err != nil || !slices.Equal(got, []records.IdentityRecord{a, b}) {
		t.Fatalf("ListIdentities = %v, %v", got, err)
	}
	a2 := records.IdentityRecord{FullName: "default/a", IdentityHash: "i3", UID: "uid-a2"}
	if err := db.UpdateIdentities([]records.IdentityRecord{a2}, []string{"default/b", "default/absent"}); err != nil {
		t.Fatal(err)
	}
	if got, err := db.ListIdentities(); err != nil || !slices.Equal(got, []records.IdentityRecord{a2}) {
		t.Fatalf("after update: %v, %v", got, err)
	}
	if err := db.UpdateIdentities([]records.IdentityRecord{{UID: "x"}}, nil); err == nil {
		t.Fatal("a record without a full name was stored")
	}
}

// A v2 file (the podhost before identity hashes) migrates with its
// allocations kept and no identity records.
func TestMigrateV2ToV3(t *testing.T) {
	db := openAtVersion(t, 2, func(tx *bolt.Tx) error {
		return (&Tx{tx: tx}).PutAllocation(records.Allocation{UID: "legacy", FullName: "default/a"})
	})
	defer db.Close()
	if as, _ := db.ListAllocations(); len(as) != 1 || as[0].UID != "legacy" {
		t.Fatalf("allocations after migration: %v", as)
	}
	if ids, err := db.ListIdentities(); err != nil || len(ids) != 0 {
		t.Fatalf("identities after migration: %v, %v", ids, err)
	}
}
