package userns

import (
	"errors"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/model/records"
)

// memStore is the state db's contract in memory: one lock per call, the
// pod's own record first.
type memStore struct {
	mu   sync.Mutex
	recs map[types.UID]records.UserNSRecord
}

func (s *memStore) AllocateUserNS(uid types.UID, pick func([]records.UserNSRecord) (records.UserNSRecord, error)) (records.UserNSRecord, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.recs[uid]; ok {
		return r, nil
	}
	var used []records.UserNSRecord
	for _, r := range s.recs {
		used = append(used, r)
	}
	r, err := pick(used)
	if err != nil {
		return r, err
	}
	r.UID = uid
	s.recs[uid] = r
	return r, nil
}

func (s *memStore) DeleteUserNS(uid types.UID) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.recs, uid)
	return nil
}

func pod(uid string) *corev1.Pod {
	f := false
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), Name: uid, Namespace: "default"},
		Spec: corev1.PodSpec{HostUsers: &f}}
}

func TestManagerRanges(t *testing.T) {
	st := &memStore{recs: map[types.UID]records.UserNSRecord{}}
	m, err := New(st, DefaultFirstID, 3*IDsPerPod)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]uint32{"a": 65536, "b": 2 * 65536, "c": 3 * 65536}
	for _, uid := range []string{"a", "b", "c"} {
		r, err := m.Get(pod(uid))
		if err != nil || r.HostID != want[uid] || r.Size != IDsPerPod || r.FullName != "default/"+uid {
			t.Fatalf("Get(%s) = %+v, %v; want host id %d", uid, r, err, want[uid])
		}
	}
	if r, err := m.Get(pod("b")); err != nil || r.HostID != want["b"] {
		t.Fatalf("Get(b) again = %+v, %v: a pod keeps its range", r, err)
	}
	if _, err := m.Get(pod("d")); !errors.Is(err, ErrFull) {
		t.Fatalf("fourth pod: %v, want ErrFull", err)
	}
	if err := m.Release("b"); err != nil {
		t.Fatal(err)
	}
	if r, err := m.Get(pod("d")); err != nil || r.HostID != want["b"] {
		t.Fatalf("after release, Get(d) = %+v, %v; want b's range %d", r, err, want["b"])
	}
}

func TestPickSkipsOverlaps(t *testing.T) {
	m, err := New(&memStore{}, 4*IDsPerPod, 4*IDsPerPod)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		used []records.UserNSRecord
		want uint32
	}{
		{"none", nil, 4 * IDsPerPod},
		{"first taken", []records.UserNSRecord{{HostID: 4 * IDsPerPod, Size: IDsPerPod}}, 5 * IDsPerPod},
		{"unaligned record spans two", []records.UserNSRecord{{HostID: 4*IDsPerPod + 10, Size: IDsPerPod}}, 6 * IDsPerPod},
		{"outside the range ignored", []records.UserNSRecord{{HostID: IDsPerPod, Size: IDsPerPod}, {HostID: 9 * IDsPerPod, Size: IDsPerPod}}, 4 * IDsPerPod},
		{"older wider range clipped", []records.UserNSRecord{{HostID: 0, Size: 6 * IDsPerPod}}, 6 * IDsPerPod},
		{"zero size ignored", []records.UserNSRecord{{HostID: 4 * IDsPerPod}}, 4 * IDsPerPod},
	}
	for _, c := range cases {
		got, err := m.pick(c.used)
		if err != nil || got != c.want {
			t.Errorf("%s: pick = %d, %v; want %d", c.name, got, err, c.want)
		}
	}
}

func TestNewRefusesBadRanges(t *testing.T) {
	for _, c := range []struct{ first, length uint32 }{
		{0, IDsPerPod},                 // host root mapped
		{IDsPerPod + 1, IDsPerPod},     // unaligned
		{IDsPerPod, 100},               // not a multiple
		{IDsPerPod, 0},                 // empty
		{1<<32 - IDsPerPod, IDsPerPod}, // ends at 4294967295
	} {
		if _, err := New(&memStore{}, c.first, c.length); err == nil {
			t.Errorf("New(%d, %d) accepted", c.first, c.length)
		}
	}
	if _, err := New(&memStore{}, DefaultFirstID, DefaultLength); err != nil {
		t.Errorf("defaults refused: %v", err)
	}
}

func TestLabelRoundTrip(t *testing.T) {
	h, s, err := ParseLabel(Label(records.UserNSRecord{HostID: 131072, Size: 65536}))
	if err != nil || h != 131072 || s != 65536 {
		t.Fatalf("round trip = %d, %d, %v", h, s, err)
	}
	for _, bad := range []string{"", "1", "a:b", "1:0", "4294967295:2", "-1:5"} {
		if _, _, err := ParseLabel(bad); err == nil {
			t.Errorf("ParseLabel(%q) accepted", bad)
		}
	}
}
