package watchdog

import (
	"context"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

func TestShouldPing(t *testing.T) {
	now := time.Unix(1000, 0)
	tests := []struct {
		name    string
		last    time.Time
		started bool
		want    bool
	}{
		{"loop not started yet", time.Time{}, false, true},
		{"fresh beat", now.Add(-time.Second), true, true},
		{"beat just under the limit", now.Add(-15*time.Second + time.Millisecond), true, true},
		{"beat exactly at the limit", now.Add(-15 * time.Second), true, false},
		{"stale beat", now.Add(-time.Minute), true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ShouldPing(now, tt.last, tt.started, 15*time.Second); got != tt.want {
				t.Errorf("ShouldPing = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestPingerFollowsTheHeartbeat drives the pinger with a fake clock
// (WatchdogSec=30s, so pings every 15 s): pings during startup, while the
// loop beats, none once it is stuck, and again when it recovers.
func TestPingerFollowsTheHeartbeat(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	hb := NewHeartbeat(clk)
	var pings int
	p := newPinger(hb, Options{Interval: 30 * time.Second, Clock: clk, Notify: func(s string) error {
		if s != "WATCHDOG=1" {
			t.Fatalf("notify %q", s)
		}
		pings++
		return nil
	}})
	steps := []struct {
		name    string
		advance time.Duration
		beat    bool // the loop iterates (after the advance)
		want    bool
	}{
		{"startup, loop not running yet", 0, false, true},
		{"still starting 15 s later", 15 * time.Second, false, true},
		{"loop iterating", 15 * time.Second, true, true},
		{"housekeeping beat 2 s before the tick", 13 * time.Second, true, true},
		{"loop stuck: last beat 15 s old", 15 * time.Second, false, false},
		{"still stuck", 15 * time.Second, false, false},
		{"loop recovered", 15 * time.Second, true, true},
	}
	wantPings := 0
	for _, s := range steps {
		clk.Step(s.advance)
		if s.beat {
			hb.Beat()
		}
		if got := p.tick(); got != s.want {
			t.Errorf("%s: pinged = %v, want %v", s.name, got, s.want)
		}
		if s.want {
			wantPings++
		}
	}
	if pings != wantPings {
		t.Errorf("pings = %d, want %d", pings, wantPings)
	}
}

func TestRunDisabledWithoutWatchdog(t *testing.T) {
	called := false
	Run(context.Background(), NewHeartbeat(nil), Options{Notify: func(string) error { called = true; return nil }}) // returns at once
	if called {
		t.Fatal("pinged with the watchdog disabled")
	}
}
