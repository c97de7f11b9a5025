package daemon

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/podhost/podhost/internal/state"
)

// fakeStateDB fails writes until space is freed.
type fakeStateDB struct {
	mu     sync.Mutex
	full   bool
	probes int
	since  time.Time
}

func (f *fakeStateDB) WriteHealth() state.WriteHealth {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.full {
		return state.WriteHealth{Err: "no space left on device", Since: f.since}
	}
	return state.WriteHealth{OK: true}
}

func (f *fakeStateDB) ProbeWrite() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.probes++
	return nil
}

func (f *fakeStateDB) Path() string { return "/var/lib/podhost/state.db" }

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// A full state dir is probed (only while failing) and logged once when it
// starts and once when it clears.
func TestWatchStateDB(t *testing.T) {
	db := &fakeStateDB{full: true, since: time.Now()}
	var logs syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		watchStateDB(ctx, db, slog.New(slog.NewTextHandler(&logs, nil)), time.Millisecond)
		close(done)
	}()
	waitUntil(t, func() bool { db.mu.Lock(); defer db.mu.Unlock(); return db.probes >= 3 })
	db.mu.Lock()
	db.full = false
	db.mu.Unlock()
	waitUntil(t, func() bool { return strings.Contains(logs.String(), "takes writes again") })
	db.mu.Lock()
	probes := db.probes
	db.mu.Unlock()
	cancel()
	<-done
	if n := strings.Count(logs.String(), "cannot be written"); n != 1 {
		t.Fatalf("failure logged %d times:\n%s", n, logs.String())
	}
	if db.probes != probes {
		t.Fatal("probed a healthy db")
	}
}

func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5 s")
		}
		time.Sleep(time.Millisecond)
	}
}
