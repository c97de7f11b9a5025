package runtime

import (
	"testing"
	"time"
)

func TestClaimTouchOncePerInterval(t *testing.T) {
	r := &Runtime{}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	steps := []struct {
		name string
		at   time.Time
		want bool
	}{
		{"a", t0, true},
		{"a", t0.Add(time.Second), false}, // the other creates of a cold start
		{"b", t0.Add(time.Second), true},
		{"a", t0.Add(touchInterval - time.Nanosecond), false},
		{"a", t0.Add(touchInterval), true},
		{"a", t0.Add(touchInterval + time.Second), false},
	}
	for i, s := range steps {
		if got := r.claimTouch(s.name, s.at); got != s.want {
			t.Errorf("step %d: claimTouch(%s, +%v) = %v, want %v", i, s.name, s.at.Sub(t0), got, s.want)
		}
	}
}
