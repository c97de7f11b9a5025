package footprint

import (
	"context"
	"log/slog"
	"time"

	"golang.org/x/sys/unix"
)

// Reaper gives back what a burst left: idle OS threads (down to Max) and
// the executable's pages (TrimText). Once After is closed (the end of the
// cold start: every pod of the first snapshot synced) it waits until the
// daemon is quiet, trims, then checks every Period: it reaps threads, and
// every TrimPeriod trims again if the executable's mapped pages grew by
// more than an eighth and 1 MiB over what they were one TrimPeriod after
// the last trim (the pages the daemon used since: its working set, as
// resyncs and housekeeping touch more of it over minutes). So a burst's
// pages go (an apply of many pods, a CLI that read the file and left it
// cached for fault-around), and an idle daemon is not made to read its
// working set again and again.
type Reaper struct {
	After      <-chan struct{} // nil: start checking at once
	Period     time.Duration   // default 30s
	TrimPeriod time.Duration   // default 5m; rounded up to a multiple of Period
	Max        int             // default MaxIdleThreads()
	Logger     *slog.Logger

	// Quiet is how long the daemon's CPU use must stay under a tenth of a
	// core, sampled every QuietPoll, before the first trim; waited for at
	// most QuietMax. Defaults 2s, 1s and 2m.
	Quiet, QuietPoll, QuietMax time.Duration
	Trim                       func() (int, error)  // default TrimText
	TextRSS                    func() (int, error)  // default TextRSS
	CPUTime                    func() time.Duration // default: this process's user + system time
}

const trimSlack = 1 << 20 // bytes of growth that never cause a trim

func (r *Reaper) defaults() {
	if r.Period <= 0 {
		r.Period = 30 * time.Second
	}
	if r.TrimPeriod <= 0 {
		r.TrimPeriod = 5 * time.Minute
	}
	if r.Max <= 0 {
		r.Max = MaxIdleThreads()
	}
	if r.Quiet <= 0 {
		r.Quiet = 2 * time.Second
	}
	if r.QuietPoll <= 0 {
		r.QuietPoll = time.Second
	}
	if r.QuietMax <= 0 {
		r.QuietMax = 2 * time.Minute
	}
	if r.Trim == nil {
		r.Trim = TrimText
	}
	if r.TextRSS == nil {
		r.TextRSS = TextRSS
	}
	if r.CPUTime == nil {
		r.CPUTime = cpuTime
	}
}

// Run reaps until ctx is done.
func (r Reaper) Run(ctx context.Context) {
	r.defaults()
	select {
	case <-ctx.Done():
		return
	case <-r.After:
	}
	if !r.waitQuiet(ctx) {
		return
	}
	t := time.NewTicker(r.Period)
	defer t.Stop()
	every := max(int((r.TrimPeriod+r.Period-1)/r.Period), 1)
	r.reap()
	warned := r.trim(false)
	base, sinceTrim := 0, 0 // base: the mapped text one TrimPeriod after the last trim
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		r.reap()
		if sinceTrim++; sinceTrim%every != 0 {
			continue
		}
		cur, err := r.TextRSS()
		switch {
		case err != nil:
		case sinceTrim == every:
			base = cur
		case cur > base+base/8+trimSlack:
			warned, sinceTrim = r.trim(warned), 0
		}
	}
}

// waitQuiet waits until the daemon used less than a tenth of a core for
// Quiet, or QuietMax passed; false if ctx ended first.
func (r Reaper) waitQuiet(ctx context.Context) bool {
	poll := r.QuietPoll
	t := time.NewTicker(poll)
	defer t.Stop()
	deadline := time.Now().Add(r.QuietMax)
	prev, quiet := r.CPUTime(), time.Duration(0)
	for quiet < r.Quiet && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
		cur := r.CPUTime()
		if cur-prev < poll/10 {
			quiet += poll
		} else {
			quiet = 0
		}
		prev = cur
	}
	return true
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
// would repeat.
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

// cpuTime is this process's user and system CPU time.
func cpuTime() time.Duration {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
