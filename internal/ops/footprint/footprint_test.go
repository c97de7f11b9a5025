package footprint

import (
	"context"
	"runtime/debug"
	"sync"
	"syscall"
	"testing"
	"time"
)

func TestSetGCDefaults(t *testing.T) {
	old := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(old) })
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	if !SetGCDefaults(getenv) {
		t.Fatal("no GOGC set: want the default applied")
	}
	if p := debug.SetGCPercent(100); p != DefaultGOGC {
		t.Fatalf("GC percent = %d, want %d", p, DefaultGOGC)
	}
	env["GOGC"] = "200" // the runtime applied it at start; left alone
	if SetGCDefaults(getenv) {
		t.Fatal("GOGC set: want it honoured")
	}
	if p := debug.SetGCPercent(100); p != 100 {
		t.Fatalf("GC percent = %d, want unchanged 100", p)
	}
}

// burst blocks n goroutines in a system call at once: the runtime makes a
// thread for each, and keeps them.
func burst(n int) {
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ts := syscall.Timespec{Nsec: int64(50 * time.Millisecond)}
			_ = syscall.Nanosleep(&ts, nil)
		}()
	}
	wg.Wait()
}

func TestReaperEndsIdleThreads(t *testing.T) {
	burst(24)
	before := Threads()
	if before <= MaxIdleThreads() {
		t.Skipf("the burst left %d threads, no more than %d", before, MaxIdleThreads())
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go Reaper{After: closed(), Period: 10 * time.Millisecond, Quiet: time.Millisecond, QuietPoll: time.Millisecond,
		Trim: func() (int, error) { return 0, nil }, TextUse: func() (int, int, error) { return 0, 0, nil },
		CPUTime: func() time.Duration { return 0 }}.Run(ctx)
	deadline := time.Now().Add(5 * time.Second)
	for Threads() > MaxIdleThreads() {
		if time.Now().After(deadline) {
			t.Fatalf("threads: %d before, %d now, want at most %d", before, Threads(), MaxIdleThreads())
		}
		time.Sleep(10 * time.Millisecond)
	}
	burst(4) // the runtime still makes threads when it needs them
}

func closed() <-chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}
