package syncer

import (
	"slices"
	"testing"
	"time"
)

func TestBackoffDoublesAndCaps(t *testing.T) {
	now := time.Unix(1000, 0)
	b := newBackoff(func() time.Time { return now }, 0)
	key := backoffKey("u", "c", "crash")
	if in, _ := b.inBackoff(key, time.Time{}); in {
		t.Fatal("fresh key must not be in back-off")
	}
	var delays []time.Duration
	for i := 0; i < 7; i++ {
		delays = append(delays, b.next(key, now))
		now = now.Add(time.Second)
	}
	want := []time.Duration{10, 20, 40, 80, 160, 300, 300}
	for i, d := range delays {
		if d != want[i]*time.Second {
			t.Fatalf("delays = %v", delays)
		}
	}
	if in, left := b.inBackoff(key, time.Time{}); !in || left <= 0 {
		t.Fatalf("in back-off: %v %v", in, left)
	}
	now = now.Add(backoffMax)
	if in, _ := b.inBackoff(key, time.Time{}); in {
		t.Fatal("window must expire")
	}
	// A long quiet period resets to the base delay.
	now = now.Add(3 * backoffMax)
	if d := b.next(key, now); d != backoffBase {
		t.Fatalf("after quiet period delay = %v", d)
	}
	b.forgetPod("u")
	if in, _ := b.inBackoff(key, time.Time{}); in {
		t.Fatal("forgetPod must drop entries")
	}
}

// A cap below 10 s (crashLoopBackOffMax) is also the first delay.
func TestBackoffCap(t *testing.T) {
	now := time.Unix(1000, 0)
	b := newBackoff(func() time.Time { return now }, 2*time.Second)
	for i, want := range []time.Duration{2 * time.Second, 2 * time.Second, 2 * time.Second} {
		if got := b.next("k", now); got != want {
			t.Fatalf("failure %d: delay %v, want %v", i+1, got, want)
		}
		now = now.Add(time.Second)
	}
	b = newBackoff(func() time.Time { return now }, time.Minute)
	var got []time.Duration
	for range 5 {
		got = append(got, b.next("k", now))
	}
	if want := []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second, time.Minute, time.Minute}; !slices.Equal(got, want) {
		t.Fatalf("delays %v, want %v", got, want)
	}
}
