package api

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// window returns the events i-n+1..i of a pod (what a store keeping the
// last n events lists after the i-th).
func window(i, n int) []ObjectEvent {
	var evs []ObjectEvent
	for j := max(0, i-n+1); j <= i; j++ {
		evs = append(evs, ObjectEvent{Namespace: "default", Pod: "web", Event: Event{
			Time: time.Unix(int64(j), 0).UTC(), Type: "Normal", Reason: "Started", Message: fmt.Sprint("event ", j)}})
	}
	return evs
}

// An events watch remembers only the events the backend still lists: over
// 20000 events of a pod whose store keeps the last 100, it sends each once
// and holds at most 100 (it held all 20000 for the life of the
// connection).
func TestSentEventsStayBounded(t *testing.T) {
	var sent sentEvents
	total := 0
	for i := range 20000 {
		var fresh []ObjectEvent
		sent, fresh = sent.update(window(i, 100))
		if len(fresh) != 1 || fresh[0].Message != fmt.Sprint("event ", i) {
			t.Fatalf("round %d: sent %v, want event %d only", i, fresh, i)
		}
		total += len(fresh)
		if len(sent) > 100 {
			t.Fatalf("round %d: %d events remembered, want at most 100", i, len(sent))
		}
	}
	if total != 20000 {
		t.Fatalf("sent %d events", total)
	}
}

// eventsBackend lists a sliding window of events and signals each new one.
type eventsBackend struct {
	watchBackend
	mu sync.Mutex
	i  int
}

func (b *eventsBackend) AllEvents(string) ([]ObjectEvent, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return window(b.i, 3), nil
}

func (b *eventsBackend) next() {
	b.mu.Lock()
	b.i++
	b.mu.Unlock()
	b.set()
}

// Through the server: the existing events first, then each new one once,
// while older ones leave the backend's list.
func TestWatchEventsSlidingWindow(t *testing.T) {
	b := &eventsBackend{watchBackend: watchBackend{changed: make(chan struct{})}, i: 4}
	c := startServer(t, b, func(s *Server) { s.EnableObserve(b) })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var got []string
	err := c.WatchEvents(ctx, "", "", func(e ObjectEvent) error {
		got = append(got, e.Message)
		switch {
		case len(got) >= 13:
			cancel()
		case len(got) >= 3:
			b.next()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range got {
		if want := fmt.Sprint("event ", i+2); m != want {
			t.Fatalf("events %q: #%d is %q, want %q", got, i, m, want)
		}
	}
}
