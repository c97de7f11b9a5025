package footprint

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"
)

// fakeDaemon is the reaper's view of a daemon: CPU time, mapped text and
// trims, all counted.
type fakeDaemon struct {
	cpu, text             atomic.Int64 // ns, bytes
	cpuReads, textReads   atomic.Int32
	trims, trimsAtCPURead atomic.Int32 // trims; CPU reads done at the first trim
	trimErr               error
}

func (f *fakeDaemon) reaper(after <-chan struct{}) Reaper {
	return Reaper{After: after, Period: time.Millisecond, TrimPeriod: time.Millisecond,
		Quiet: 3 * time.Millisecond, QuietPoll: time.Millisecond, QuietMax: time.Minute,
		CPUTime: func() time.Duration { f.cpuReads.Add(1); return time.Duration(f.cpu.Load()) },
		TextRSS: func() (int, error) { f.textReads.Add(1); return int(f.text.Load()), nil },
		Trim: func() (int, error) {
			if f.trims.Add(1) == 1 {
				f.trimsAtCPURead.Store(f.cpuReads.Load())
			}
			return 1, f.trimErr
		}}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestReaperTrimsOnceTheColdStartIsQuiet(t *testing.T) {
	f := &fakeDaemon{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	after := make(chan struct{})
	busy := make(chan struct{})
	go func() { // half a core in use until busy closes
		for {
			select {
			case <-busy:
				return
			case <-time.After(time.Millisecond):
				f.cpu.Add(int64(time.Second))
			}
		}
	}()
	go f.reaper(after).Run(ctx)
	if f.cpuReads.Load() != 0 || f.trims.Load() != 0 {
		t.Fatal("the reaper looked before the cold start ended")
	}
	close(after)
	waitFor(t, "10 CPU samples", func() bool { return f.cpuReads.Load() >= 10 })
	if n := f.trims.Load(); n != 0 {
		t.Fatalf("trimmed %d times while the daemon was busy", n)
	}
	close(busy)
	reads := f.cpuReads.Load()
	waitFor(t, "the first trim", func() bool { return f.trims.Load() == 1 })
	if at := f.trimsAtCPURead.Load(); at < reads+3 {
		t.Fatalf("first trim after CPU sample %d, want 3 quiet samples after %d", at, reads)
	}
}

func TestReaperTrimsAgainWhenTextGrows(t *testing.T) {
	f := &fakeDaemon{}
	f.text.Store(10 << 20)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go f.reaper(closed()).Run(ctx)
	waitFor(t, "the first trim", func() bool { return f.trims.Load() == 1 })

	// The working set is measured one TrimPeriod after the trim; growth
	// within an eighth plus 1 MiB of it is not worth reading it all again.
	waitFor(t, "a measure", func() bool { return f.textReads.Load() >= 1 })
	f.text.Store(10<<20 + 10<<20/8 + 1<<20)
	r := f.textReads.Load()
	waitFor(t, "20 measures", func() bool { return f.textReads.Load() >= r+20 })
	if n := f.trims.Load(); n != 1 {
		t.Fatalf("trimmed %d times for growth within the slack", n)
	}
	f.text.Add(1 << 10)
	waitFor(t, "a trim for the growth", func() bool { return f.trims.Load() == 2 })
	// A new working set is measured after each trim.
	r = f.textReads.Load()
	waitFor(t, "20 measures", func() bool { return f.textReads.Load() >= r+20 })
	if n := f.trims.Load(); n != 2 {
		t.Fatalf("trimmed %d times with the text unchanged since the last trim", n)
	}
}

// countingHandler counts the records logged at or above Info.
type countingHandler struct{ n atomic.Int32 }

func (h *countingHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelInfo }
func (h *countingHandler) Handle(context.Context, slog.Record) error    { h.n.Add(1); return nil }
func (h *countingHandler) WithAttrs([]slog.Attr) slog.Handler           { return h }
func (h *countingHandler) WithGroup(string) slog.Handler                { return h }

func TestReaperLogsTrimFailureOnce(t *testing.T) {
	f := &fakeDaemon{trimErr: errors.New("not a static executable")}
	h := &countingHandler{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := f.reaper(closed())
	r.Logger = slog.New(h)
	r.TextRSS = func() (int, error) { return int(f.text.Add(2 << 20)), nil } // always growing
	go r.Run(ctx)
	waitFor(t, "5 trims", func() bool { return f.trims.Load() >= 5 })
	if n := h.n.Load(); n != 1 {
		t.Fatalf("%d failures logged at Info or above over %d trims, want 1", n, f.trims.Load())
	}
}
