package daemon

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/podhost/podhost/internal/host/state"
)

// fakeStateDB fails writes while failing is set.
type fakeStateDB struct {
	mu      sync.Mutex
	failing bool
	probes  int
}

func (f *fakeStateDB) WriteHealth() state.WriteHealth {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failing {
		return state.WriteHealth{Err: "write state.db: no space left on device", Since: time.Now()}
	}
	return state.WriteHealth{OK: true}
}

func (f *fakeStateDB) ProbeWrite() error { f.mu.Lock(); defer f.mu.Unlock(); f.probes++; return nil }
func (f *fakeStateDB) Path() string      { return "/var/lib/podhost/state.db" }

// The state dir is unhealthy while the db fails commits or the dir has
// (almost) no space left; the db is probed only while it fails; changes are
// logged once each way.
func TestStateHealth(t *testing.T) {
	db := &fakeStateDB{}
	var logs bytes.Buffer
	h := newStateHealth(db, slog.New(slog.NewTextHandler(&logs, nil)))
	avail := uint64(100 << 20)
	h.free = func(string) (uint64, error) { return avail, nil }
	steps := []struct {
		name    string
		failing bool
		avail   uint64
		healthy bool
		errHas  string
	}{
		{"healthy", false, 100 << 20, true, ""},
		{"db commit fails", true, 100 << 20, false, "no space left on device"},
		{"still failing", true, 100 << 20, false, "no space left on device"},
		{"db ok, dir full", false, 4096, false, "is full (4096 bytes free)"},
		{"space freed", false, 100 << 20, true, ""},
	}
	for _, s := range steps {
		db.failing, avail = s.failing, s.avail
		probes := db.probes
		h.check()
		st := h.Status()
		if st.Healthy != s.healthy || !strings.Contains(st.Error, s.errHas) {
			t.Fatalf("%s: %+v", s.name, st)
		}
		if probed := db.probes > probes; probed != s.failing {
			t.Fatalf("%s: probed=%v", s.name, probed)
		}
	}
	if n := strings.Count(logs.String(), "cannot be written"); n != 1 {
		t.Fatalf("outage logged %d times:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), "takes writes again") {
		t.Fatalf("recovery not logged:\n%s", logs.String())
	}
}
