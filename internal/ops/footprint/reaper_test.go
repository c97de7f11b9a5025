package footprint

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"
)

// fakeDaemon is the reaper's view of a daemon: CPU time, mapped and used
// text, and trims, all counted.
type fakeDaemon struct {
	cpu, mapped, used     atomic.Int64 // ns, bytes, bytes
	cpuReads, textReads   atomic.Int32
	trims, trimsAtCPURead atomic.Int32 // trims; CPU reads done at the first trim
	trimErr               error
}

func (f *fakeDaemon) reaper(after <-chan struct{}) Reaper {
	return Reaper{After: after, Period: time.Millisecond, TrimPeriod: time.Millisecond,
		Quiet: 3 * time.Millisecond, QuietPoll: time.Millisecond, QuietMax: time.Minute,
		CPUTime: func() time.Duration { f.cpuReads.Add(1); return time.Duration(f.cpu.Load()) },
		TextUse: func() (int, int, error) {
			f.textReads.Add(1)
			return int(f.mapped.Load()), int(f.used.Load()), nil
		},
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
	var busy atomic.Bool
	busy.Store(true)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	after := make(chan struct{})
	r := f.reaper(after)
	r.CPUTime = func() time.Duration { // a second of CPU between two samples while busy
		b := busy.Load()
		f.cpuReads.Add(1)
		if b {
			return time.Duration(f.cpu.Add(int64(time.Second)))
		}
		return time.Duration(f.cpu.Load())
	}
	done := make(chan struct{})
	go func() { r.Run(ctx); close(done) }()
	close(after)
	waitFor(t, "10 CPU samples", func() bool { return f.cpuReads.Load() >= 10 })
	if n := f.trims.Load(); n != 0 {
		t.Fatalf("trimmed %d times while the daemon was busy", n)
	}
	busy.Store(false)
	reads := f.cpuReads.Load()
	waitFor(t, "the first trim", func() bool { return f.trims.Load() == 1 })
	if at := f.trimsAtCPURead.Load(); at < reads+3 {
		t.Fatalf("first trim after CPU sample %d, want 3 quiet samples after %d", at, reads)
	}
	cancel()
	<-done
}

func TestReaperWaitsForTheColdStart(t *testing.T) {
	f := &fakeDaemon{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { f.reaper(make(chan struct{})).Run(ctx); close(done) }()
	cancel() // the cold start never ended
	<-done
	if f.cpuReads.Load() != 0 || f.trims.Load() != 0 {
		t.Fatal("the reaper looked before the cold start ended")
	}
}

func TestTrimSchedule(t *testing.T) {
	const mib = 1 << 20
	s := newTrimSchedule(10)
	steps := []struct {
		tick, mapped, used int
		err                error
		want               bool
		next               int
	}{
		{10, 10 * mib, 10 * mib, nil, false, 20}, // the first look after the startup trim
		{20, 10 * mib, 4 * mib, nil, false, 30},  // 6 MiB unused: not more than half plus 1 MiB
		{30, 10 * mib, 4*mib - 1, nil, true, 40}, // two quiet looks before: no back-off
		{40, 10 * mib, 0, nil, true, 60},         // again at once: the wait doubles
		{60, 10 * mib, 10 * mib, nil, false, 80}, // the refill reads as used (x86 fault-around)
		{80, 10 * mib, 0, nil, true, 120},        // one look after: doubles again
		{120, 10 * mib, 10 * mib, nil, false, 160},
		{160, 10 * mib, 0, nil, true, 240},
		{240, 10 * mib, 0, nil, true, 360}, // at most 12 times the period
		{360, 10 * mib, 10 * mib, nil, false, 480},
		{480, 10 * mib, 0, errors.New("x"), false, 490}, // two quiet looks: the wait resets
		{490, 10 * mib, 0, nil, true, 500},
	}
	for _, st := range steps {
		if s.due(st.tick - 1) {
			t.Fatalf("due at tick %d, before %d", st.tick-1, st.tick)
		}
		if !s.due(st.tick) {
			t.Fatalf("not due at tick %d", st.tick)
		}
		if got := s.check(st.tick, st.mapped, st.used, st.err); got != st.want || s.next != st.next {
			t.Fatalf("tick %d: trim %v next %d, want %v and %d", st.tick, got, s.next, st.want, st.next)
		}
	}
}

func TestReaperTrimsAgainWhenMappedTextGoesUnused(t *testing.T) {
	f := &fakeDaemon{}
	f.mapped.Store(10 << 20)
	f.used.Store(10 << 20)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go f.reaper(closed()).Run(ctx)
	waitFor(t, "the first trim", func() bool { return f.trims.Load() == 1 })

	// Fault-around maps neighbours of what runs: up to half of the mapped
	// text (and 1 MiB) unused is not worth reading it all again.
	f.used.Store(10<<20 - 5<<20 - 1<<20)
	r := f.textReads.Load()
	waitFor(t, "20 measures", func() bool { return f.textReads.Load() >= r+20 })
	if n := f.trims.Load(); n != 1 {
		t.Fatalf("trimmed %d times with half the mapped text (and 1 MiB) unused", n)
	}
	f.used.Add(-1 << 10)
	waitFor(t, "a trim for the unused text", func() bool { return f.trims.Load() >= 2 })
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
	f.mapped.Store(10 << 20) // nothing of it used
	go r.Run(ctx)
	waitFor(t, "5 trims", func() bool { return f.trims.Load() >= 5 })
	if n := h.n.Load(); n != 1 {
		t.Fatalf("%d failures logged at Info or above over %d trims, want 1", n, f.trims.Load())
	}
}
