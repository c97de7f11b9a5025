// Package footprint keeps the daemon's own memory small: a default GC
// target when the user set none, and idle OS threads given back after a
// burst (docs/decisions.md 16).
package footprint

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
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
