// Package footprint keeps the daemon's own memory small: a default GC
// target when the user set none, and idle OS threads given back after a
// burst (docs/decisions.md 16).
package footprint

import (
	"context"
	"log/slog"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"time"
)

// DefaultGOGC is the daemon's GC percent when the environment sets no GOGC.
const DefaultGOGC = 50

// SetGCDefaults sets the GC percent to DefaultGOGC unless the GOGC
// environment variable is set (getenv is os.Getenv); it reports whether it
// did. GOMEMLIMIT, when set, is applied by the runtime itself.
func SetGCDefaults(getenv func(string) string) bool {
	if getenv("GOGC") != "" {
		return false
	}
	debug.SetGCPercent(DefaultGOGC)
	return true
}

const threadsMetric = "/sched/threads/total:threads"

// Threads is the number of OS threads the Go runtime has.
func Threads() int {
	s := []metrics.Sample{{Name: threadsMetric}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int(s[0].Value.Uint64())
}

// MaxIdleThreads is how many threads the reaper leaves: the runtime's own
// (sysmon, the template and signal threads), one per P, and a few spare
// for blocking system calls.
func MaxIdleThreads() int { return 2*runtime.GOMAXPROCS(0) + 6 }

// Reap ends up to n OS threads and returns the memory they held. The Go
// runtime never ends an idle thread by itself, so every thread made during
// a burst of blocking system calls (a cold start: CNI plugins, mounts,
// cgroup writes of many pods at once) stays, with its g0 and signal stacks.
// A goroutine that exits while locked to its thread ends that thread
// (runtime.LockOSThread); the runtime makes new threads whenever it needs
// them again.
func Reap(n int) {
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread() // not unlocked: the thread ends with the goroutine
		}()
	}
	wg.Wait()
	debug.FreeOSMemory()
}

// Reaper reaps down to Max once After is closed (the end of the cold
// start: every pod of the first snapshot synced), then checks every Period.
// It also trims the executable's mapped pages (TrimText) then and every
// TrimPeriod, so what a burst mapped is given back.
type Reaper struct {
	After      <-chan struct{} // nil: start checking at once
	Period     time.Duration   // default 30s
	TrimPeriod time.Duration   // default 5m; rounded up to a multiple of Period
	Max        int             // default MaxIdleThreads()
	Logger     *slog.Logger
	Trim       func() (int, error) // default TrimText
}

// Run reaps until ctx is done.
func (r Reaper) Run(ctx context.Context) {
	if r.Period <= 0 {
		r.Period = 30 * time.Second
	}
	if r.TrimPeriod <= 0 {
		r.TrimPeriod = 5 * time.Minute
	}
	if r.Max <= 0 {
		r.Max = MaxIdleThreads()
	}
	if r.Trim == nil {
		r.Trim = TrimText
	}
	select {
	case <-ctx.Done():
		return
	case <-r.After:
	}
	t := time.NewTicker(r.Period)
	defer t.Stop()
	every := max(int((r.TrimPeriod+r.Period-1)/r.Period), 1)
	warned := false
	for i := 0; ; i++ {
		r.reap()
		if i%every == 0 {
			warned = r.trim(warned)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (r Reaper) reap() {
	n := Threads()
	if n <= r.Max {
		return
	}
	Reap(n - r.Max)
	if r.Logger != nil {
		r.Logger.Debug("footprint: idle threads ended", "before", n, "after", Threads())
	}
}

// trim trims and logs; a failure is logged once (warned: already), as it
// would repeat every TrimPeriod.
func (r Reaper) trim(warned bool) bool {
	n, err := r.Trim()
	if r.Logger == nil {
		return warned || err != nil
	}
	if err != nil {
		if !warned {
			r.Logger.Info("footprint: executable pages not trimmed (logged once)", "bytes", n, "err", err)
		}
		return true
	}
	r.Logger.Debug("footprint: executable pages trimmed", "bytes", n)
	return warned
}
