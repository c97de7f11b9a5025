package state

import (
	"errors"
	"testing"

	"github.com/podhost/podhost/internal/model/records"
)

// next picks the range after the highest used one (a stand-in for the
// allocator of internal/kubelet/userns).
func next(used []records.UserNSRecord) (records.UserNSRecord, error) {
	r := records.UserNSRecord{HostID: 65536, Size: 65536}
	for _, u := range used {
		if u.HostID >= r.HostID {
			r.HostID = u.HostID + u.Size
		}
	}
	return r, nil
}

func TestAllocateUserNS(t *testing.T) {
	db := openTest(t)
	a, err := db.AllocateUserNS("a", next)
	if err != nil || a.UID != "a" || a.HostID != 65536 || a.Size != 65536 {
		t.Fatalf("first = %+v, %v", a, err)
	}
	b, err := db.AllocateUserNS("b", next)
	if err != nil || b.HostID != 2*65536 {
		t.Fatalf("second = %+v, %v", b, err)
	}
	again, err := db.AllocateUserNS("a", func([]records.UserNSRecord) (records.UserNSRecord, error) {
		t.Fatal("pick called for a pod that has a range")
		return records.UserNSRecord{}, nil
	})
	if err != nil || again != a {
		t.Fatalf("again = %+v, %v; want %+v", again, err, a)
	}
	full := errors.New("full")
	if _, err := db.AllocateUserNS("c", func([]records.UserNSRecord) (records.UserNSRecord, error) { return records.UserNSRecord{}, full }); !errors.Is(err, full) {
		t.Fatalf("pick error = %v", err)
	}
	if _, err := db.AllocateUserNS("", next); err == nil {
		t.Fatal("empty uid accepted")
	}
	pods, err := db.RecordedPods()
	if err != nil || !pods["a"] || !pods["b"] || pods["c"] {
		t.Fatalf("RecordedPods = %v, %v", pods, err)
	}
	if err := db.PurgePod("a"); err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteUserNS("missing"); err != nil {
		t.Fatal(err)
	}
	all, err := db.ListUserNS()
	if err != nil || len(all) != 1 || all[0] != b {
		t.Fatalf("after purge = %+v, %v; want only %+v", all, err, b)
	}
	rebuilt := records.UserNSRecord{UID: "a", FullName: "default/a", HostID: 65536, Size: 65536}
	if err := db.PutUserNS(rebuilt); err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteUserNS("b"); err != nil {
		t.Fatal(err)
	}
	if all, _ := db.ListUserNS(); len(all) != 1 || all[0] != rebuilt {
		t.Fatalf("after put/delete = %+v", all)
	}
}
