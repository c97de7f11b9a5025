package footprint

import (
	"context"
	"log/slog"
	"runtime/debug"
	"time"

	"golang.org/x/sys/unix"
)

// Reaper gives back what a burst left: idle OS threads (down to Max) and
// the executable's pages (TrimText), and the heap's free pages after the
// cold start (debug.FreeOSMemory). Once After is closed (the end of the
// cold start: every pod of the first snapshot synced) it waits until the
// daemon is quiet, trims, then checks every Period: it reaps threads, and
// every TrimPeriod trims again if more than half of the executable's mapped
// pages plus 1 MiB went unused for the whole TrimPeriod (TextUse; the wait
// doubles, up to an hour, while trims come back at once: trimSchedule). So a
// burst's pages go (an apply of many pods, a CLI run that read the file
// and left it cached for fault-around to map), and an idle daemon is not
// made to read its working set again: fault-around maps unused neighbours
// of what it runs, ~40 % of its mapped text over minutes (30 pods, dev
// env), but not half.
type Reaper struct {
	After      <-chan struct{} // nil: start at once (after the quiet wait)
	Period     time.Duration   // default 30s
	TrimPeriod time.Duration   // default 5m; rounded up to a multiple of Period
	Max        int             // default MaxIdleThreads()
	Logger     *slog.Logger

	// Quiet is how long the daemon's CPU use must stay under a tenth of a
	// core, sampled every QuietPoll, before the first trim; waited for at
	// most QuietMax. Defaults 2s, 1s and 2m.
	Quiet, QuietPoll, QuietMax time.Duration
	Trim                       func() (int, error)                  // default TrimText
	TextUse                    func() (mapped, used int, err error) // default TextUse
	CPUTime                    func() time.Duration                 // default: this process's user + system time
}

const trimSlack = 1 << 20 // bytes mapped and unused that never cause a trim

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
	if r.TextUse == nil {
		r.TextUse = TextUse
	}
	if r.CPUTime == nil {
		r.CPUTime = cpuTime
	}
}

// Run reaps until ctx is done.
func (r Reaper) Run(ctx context.Context) {
	r.defaults()
	if r.After != nil {
		select {
		case <-ctx.Done():
			return
		case <-r.After:
		}
	}
	if !r.waitQuiet(ctx) {
		return
	}
	t := time.NewTicker(r.Period)
	defer t.Stop()
	if !r.reap() {
		debug.FreeOSMemory() // the cold start's garbage, now, not by the scavenger's pace (Reap does it too)
	}
	warned := r.trim(false)
	useWarned := false
	look := func() (mapped, used int, err error) { // TextUse, a failure logged once
		if mapped, used, err = r.TextUse(); err != nil {
			useWarned = r.warnOnce(useWarned, "footprint: executable pages not measured (logged once)", "err", err)
		}
		return mapped, used, err
	}
	_, _, _ = look() // the first window starts with the trim
	sched := newTrimSchedule(max(int((r.TrimPeriod+r.Period-1)/r.Period), 1))
	for i := 1; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		r.reap()
		if !sched.due(i) {
			continue
		}
		mapped, used, err := look()
		if sched.check(i, mapped, used, err) {
			warned = r.trim(warned)
			_, _, _ = look()
		}
	}
}

// trimSchedule says when the reaper looks at the text's use and whether it
// trims: every `every` ticks, when more than half of the mapped text plus
// trimSlack went unused since the last look. A trim called for at the
// first or second look after the last one (the startup trim counts) doubles
// the wait, up to 12 times the period: the text came back unused at once
// (fault-around mapping more than half unused neighbours on some machine,
// reclaim clearing the accessed bits), and reading the working set again
// every period would not end. The first look after a trim says little (on
// x86 the pages fault-around maps are marked accessed, so the refill reads
// as used); two looks in a row that call for none reset the wait.
type trimSchedule struct {
	base, every, next int
	quietLooks        int // looks since the last trim that called for none
}

func newTrimSchedule(every int) *trimSchedule {
	return &trimSchedule{base: every, every: every, next: every}
}

func (s *trimSchedule) due(tick int) bool { return tick >= s.next }

// check takes the look at tick and reports whether to trim.
func (s *trimSchedule) check(tick, mapped, used int, err error) bool {
	trim := err == nil && mapped-used > mapped/2+trimSlack
	if trim {
		if s.quietLooks < 2 {
			s.every = min(s.every*2, s.base*12)
		}
		s.quietLooks = 0
	} else if s.quietLooks++; s.quietLooks >= 2 {
		s.every = s.base
	}
	s.next = tick + s.every
	return trim
}

// warnOnce logs msg at Info unless warned (already) and returns true.
func (r Reaper) warnOnce(warned bool, msg string, args ...any) bool {
	if !warned && r.Logger != nil {
		r.Logger.Info(msg, args...)
	}
	return true
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

// reap ends threads beyond Max and reports whether it did (and so ran
// FreeOSMemory).
func (r Reaper) reap() bool {
	n := Threads()
	if n <= r.Max {
		return false
	}
	Reap(n - r.Max)
	if r.Logger != nil {
		r.Logger.Debug("footprint: idle threads ended", "before", n, "after", Threads())
	}
	return true
}

// trim trims and logs; a failure is logged once (warned: already), as it
// would repeat.
func (r Reaper) trim(warned bool) bool {
	n, err := r.Trim()
	if err != nil {
		return r.warnOnce(warned, "footprint: executable pages not trimmed (logged once)", "bytes", n, "err", err)
	}
	if r.Logger != nil {
		r.Logger.Debug("footprint: executable pages trimmed", "bytes", n)
	}
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
