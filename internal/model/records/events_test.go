package records

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// A repeated event is counted into the first one and becomes the newest,
// as the kubelet's recorder aggregates; the others stay, so a failing
// probe no longer pushes Pulled, Created and Started out.
func TestAddEventAggregates(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ev := func(sec int, reason, msg string) Event {
		return Event{Time: t0.Add(time.Duration(sec) * time.Second), Type: "Normal", Reason: reason, Message: msg}
	}
	var evs []Event
	for i, r := range []string{"Pulled", "Created", "Started"} {
		evs = AddEvent(evs, ev(i, r, r))
	}
	for i := range 500 {
		evs = AddEvent(evs, ev(10+i, "Unhealthy", "Liveness probe failed"))
	}
	if len(evs) != 4 || evs[0].Reason != "Pulled" || evs[2].Reason != "Started" {
		t.Fatalf("events %+v", evs)
	}
	u := evs[3]
	if u.Count != 500 || !u.First.Equal(t0.Add(10*time.Second)) || !u.Time.Equal(t0.Add(509*time.Second)) {
		t.Fatalf("aggregated %+v, want x500 from 10s to 509s", u)
	}
	evs = AddEvent(evs, ev(600, "Started", "Started"))
	if evs[3].Reason != "Started" || evs[3].Count != 2 || evs[2].Reason != "Unhealthy" {
		t.Fatalf("a repeat moves to the end: %+v", evs)
	}
}

// Distinct events are kept up to MaxEventsPerPod and MaxEventBytesPerPod,
// the oldest dropped first; the newest stays even when it alone is larger.
func TestAddEventBounded(t *testing.T) {
	var evs []Event
	for i := range MaxEventsPerPod + 10 {
		evs = AddEvent(evs, Event{Type: "Normal", Reason: "R", Message: fmt.Sprint(i)})
	}
	if len(evs) != MaxEventsPerPod || evs[0].Message != "10" {
		t.Fatalf("%d events, first %q", len(evs), evs[0].Message)
	}
	big := strings.Repeat("x", 20<<10)
	for i := range 5 {
		evs = AddEvent(evs, Event{Type: "Warning", Reason: "Big", Message: fmt.Sprint(i) + big})
	}
	size := 0
	for _, e := range evs {
		size += e.Size()
	}
	if size > MaxEventBytesPerPod || len(evs) != 3 || !strings.HasPrefix(evs[2].Message, "4") {
		t.Fatalf("%d events, %d bytes: want the 3 newest big ones within %d", len(evs), size, MaxEventBytesPerPod)
	}
	huge := AddEvent(evs, Event{Message: strings.Repeat("é", MaxEventBytesPerPod)})
	if last := huge[len(huge)-1].Message; len(last) > maxEventMessage+20 || !strings.HasSuffix(last, "é …(truncated)") {
		t.Fatalf("a long message is kept whole or cut inside a rune: %d bytes, ends %q", len(last), last[len(last)-20:])
	}
}
