// Package watchdog sends systemd's WATCHDOG=1 only while podhost's sync loop
// makes progress. The loop calls Heartbeat.Beat on every iteration (events,
// probe updates, manifest snapshots and the housekeeping tick, which fires
// every few seconds even when nothing happens); Run pings every
// WatchdogSec/2 but only if the last beat is fresher than WatchdogSec/2. A
// loop stuck in one iteration stops the pings, systemd's watchdog fires and
// restarts podhost, and the new podhost adopts the running pods.
//
// Before the loop's first beat (startup: state db, containerd, rebuild) Run
// pings unconditionally: start-up has systemd's TimeoutStartSec of its own.
package watchdog

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"k8s.io/utils/clock"
)

// Heartbeat records the time of the sync loop's last iteration. Safe for
// concurrent use; the zero value has never beaten.
type Heartbeat struct {
	clock clock.PassiveClock
	last  atomic.Int64 // unix nanoseconds; 0 = never
}

// NewHeartbeat returns a Heartbeat on c (nil: the real clock).
func NewHeartbeat(c clock.PassiveClock) *Heartbeat {
	if c == nil {
		c = clock.RealClock{}
	}
	return &Heartbeat{clock: c}
}

// Beat records that the loop completed an iteration now.
func (h *Heartbeat) Beat() { h.last.Store(h.clock.Now().UnixNano()) }

// Last returns the time of the last beat; ok is false before the first.
func (h *Heartbeat) Last() (t time.Time, ok bool) {
	n := h.last.Load()
	if n == 0 {
		return time.Time{}, false
	}
	return time.Unix(0, n), true
}

// ShouldPing is the watchdog decision: ping when the loop has not started
// yet, or when its last beat is younger than maxAge (WatchdogSec/2).
func ShouldPing(now, last time.Time, started bool, maxAge time.Duration) bool {
	if !started {
		return true
	}
	return now.Sub(last) < maxAge
}

// Options configure Run.
type Options struct {
	// Interval is systemd's WatchdogSec (sd_watchdog_enabled); Run does
	// nothing when it is 0.
	Interval time.Duration
	// Notify sends one sd_notify state ("WATCHDOG=1").
	Notify func(state string) error
	Clock  clock.WithTicker // default: the real clock
	Logger *slog.Logger
}

// Run pings every Interval/2 while h is fresh, until ctx is done.
func Run(ctx context.Context, h *Heartbeat, o Options) {
	if o.Interval <= 0 || o.Notify == nil {
		return
	}
	p := newPinger(h, o)
	t := p.clock.NewTicker(o.Interval / 2)
	defer t.Stop()
	for {
		p.tick()
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
	}
}

// pinger is one Run's state: whether the last tick withheld its ping.
type pinger struct {
	h      *Heartbeat
	o      Options
	clock  clock.WithTicker
	log    *slog.Logger
	missed bool
}

func newPinger(h *Heartbeat, o Options) *pinger {
	p := &pinger{h: h, o: o, clock: o.Clock, log: o.Logger}
	if p.clock == nil {
		p.clock = clock.RealClock{}
	}
	if p.log == nil {
		p.log = slog.Default()
	}
	return p
}

// tick pings if the loop is fresh and reports whether it did.
func (p *pinger) tick() bool {
	last, started := p.h.Last()
	if !ShouldPing(p.clock.Now(), last, started, p.o.Interval/2) {
		if !p.missed {
			p.missed = true
			p.log.Error("sync loop made no progress; withholding the watchdog ping (systemd will restart podhost)",
				"lastIteration", last, "watchdogSec", p.o.Interval)
		}
		return false
	}
	if p.missed {
		p.log.Info("sync loop progressing again; watchdog pings resumed")
	}
	p.missed = false
	if err := p.o.Notify("WATCHDOG=1"); err != nil {
		p.log.Warn("watchdog ping", "err", err)
	}
	return true
}
