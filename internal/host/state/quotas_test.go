package state

import (
	"errors"
	"testing"

	"github.com/podhost/podhost/internal/model/records"
)

// nextProject picks one above the highest recorded ID (a stand-in for
// internal/host/fsquota's allocator).
func nextProject(used []records.QuotaRecord) (uint32, error) {
	id := uint32(1048577)
	for _, u := range used {
		id = max(id, u.ProjectID+1)
	}
	return id, nil
}

// A volume's project ID is chosen and recorded in one transaction, kept
// on a second call (pick not asked), survives PurgePod of its pod (the
// directory may still carry it) and goes with DeleteQuota.
func TestAllocateQuota(t *testing.T) {
	db := openTest(t)
	a, err := db.AllocateQuota(records.QuotaRecord{UID: "u1", Volume: "scratch", Path: "/p/a"}, nextProject)
	if err != nil || a.ProjectID != 1048577 || a.Key() != "u1/scratch" || a.Path != "/p/a" {
		t.Fatalf("first = %+v, %v", a, err)
	}
	b, err := db.AllocateQuota(records.QuotaRecord{UID: "u1", Volume: "cache"}, nextProject)
	if err != nil || b.ProjectID != 1048578 {
		t.Fatalf("second = %+v, %v", b, err)
	}
	again, err := db.AllocateQuota(records.QuotaRecord{UID: "u1", Volume: "scratch"}, func([]records.QuotaRecord) (uint32, error) {
		t.Fatal("pick called for a volume that has an ID")
		return 0, nil
	})
	if err != nil || again != a {
		t.Fatalf("again = %+v, %v; want %+v", again, err, a)
	}
	full := errors.New("full")
	if _, err := db.AllocateQuota(records.QuotaRecord{UID: "u2", Volume: "x"}, func([]records.QuotaRecord) (uint32, error) { return 0, full }); !errors.Is(err, full) {
		t.Fatalf("pick error = %v", err)
	}
	for _, bad := range []records.QuotaRecord{{Volume: "x"}, {UID: "u3"}} {
		if _, err := db.AllocateQuota(bad, nextProject); err == nil {
			t.Fatalf("%+v accepted", bad)
		}
	}
	if err := db.PurgePod("u1"); err != nil {
		t.Fatal(err)
	}
	if l, err := db.ListQuotas(); err != nil || len(l) != 2 {
		t.Fatalf("after PurgePod: %+v, %v; want both records kept", l, err)
	}
	if err := db.DeleteQuota(a.Key()); err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteQuota("absent/x"); err != nil {
		t.Fatal(err)
	}
	if l, err := db.ListQuotas(); err != nil || len(l) != 1 || l[0] != b {
		t.Fatalf("after delete: %+v, %v; want only %+v", l, err, b)
	}
}
