// Package rthealth tracks whether containerd answers: a periodic probe with
// a short timeout (the daemon uses containerd's Version call). The API shows
// the result: /readyz fails while containerd is unreachable, `get pods`
// warns that statuses may be stale, and `describe pod` shows when the
// runtime was last confirmed.
package rthealth

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Defaults for Options.
const (
	DefaultPeriod  = 2 * time.Second
	DefaultTimeout = 2 * time.Second
)

// Status is containerd's health as last probed.
type Status struct {
	Address string
	Healthy bool
	// Since is when containerd was first seen unreachable in the current
	// outage (zero while healthy).
	Since time.Time
	Err   string // the last probe's error while unhealthy
	// LastConfirmed is when containerd last answered: pod statuses reflect
	// the runtime as of then (plus at most one PLEG relist).
	LastConfirmed time.Time
	// Changed is when Healthy last changed (an outage began or ended);
	// zero while it has not since the Monitor was made.
	Changed time.Time
}

// Options tune a Monitor.
type Options struct {
	Period, Timeout time.Duration // defaults DefaultPeriod, DefaultTimeout
	Logger          *slog.Logger
	Now             func() time.Time
	// Answered, if set, is when containerd last answered any of podhost's
	// calls: while that is within Period, Run takes it as the probe (as
	// busy as podhost is, containerd is not asked twice).
	Answered func() time.Time
}

// Monitor probes containerd periodically.
type Monitor struct {
	probe func(context.Context) error
	opts  Options

	mu       sync.Mutex
	status   Status
	probedAt time.Time // the end of the last probe: its own call is no other answer
}

// New returns a Monitor of the containerd at address. It starts healthy,
// confirmed now: the daemon only starts once containerd answered.
func New(address string, probe func(context.Context) error, opts Options) *Monitor {
	if opts.Period <= 0 {
		opts.Period = DefaultPeriod
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Monitor{probe: probe, opts: opts,
		status: Status{Address: address, Healthy: true, LastConfirmed: opts.Now()}}
}

// Run probes every period until ctx is done.
func (m *Monitor) Run(ctx context.Context) {
	t := time.NewTicker(m.opts.Period)
	defer t.Stop()
	for {
		m.tick(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// tick is one period's check: a recent answer, else a probe.
func (m *Monitor) tick(ctx context.Context) {
	if !m.answeredRecently() {
		m.Check(ctx)
	}
}

// answeredRecently records a call containerd answered within the last
// period as a successful probe. Only while healthy (after an outage the
// probe itself confirms the recovery), and only an answer after the last
// probe ended: the probe's own call goes through the same connection.
func (m *Monitor) answeredRecently() bool {
	if m.opts.Answered == nil {
		return false
	}
	at := m.opts.Answered()
	if at.IsZero() || m.opts.Now().Sub(at) >= m.opts.Period {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.status.Healthy || !at.After(m.probedAt) {
		return false
	}
	if at.After(m.status.LastConfirmed) {
		m.status.LastConfirmed = at
	}
	return true
}

// Check probes once and records the outcome.
func (m *Monitor) Check(ctx context.Context) {
	pctx, cancel := context.WithTimeout(ctx, m.opts.Timeout)
	err := m.probe(pctx)
	cancel()
	if ctx.Err() != nil {
		return // shutting down: not containerd's fault
	}
	now := m.opts.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.probedAt = now
	s := &m.status
	switch {
	case err == nil && !s.Healthy:
		m.opts.Logger.Info("containerd reachable again", "address", s.Address, "downSince", s.Since)
		fallthrough
	case err == nil:
		if !s.Healthy {
			s.Changed = now
		}
		s.Healthy, s.Since, s.Err, s.LastConfirmed = true, time.Time{}, "", now
	case s.Healthy:
		m.opts.Logger.Warn("containerd unreachable; pod statuses may be stale", "address", s.Address, "err", err)
		s.Healthy, s.Since, s.Err, s.Changed = false, now, err.Error(), now
	default:
		s.Err = err.Error()
	}
}

// Status returns the last probe's outcome.
func (m *Monitor) Status() Status {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.status
}

// SocketProbe wraps call (e.g. containerd's Version) with a check that the
// unix socket at address exists: containerd's dialer waits for a missing
// socket until the timeout, which would only report "timeout".
func SocketProbe(address string, call func(context.Context) error) func(context.Context) error {
	path := strings.TrimPrefix(address, "unix://")
	return func(ctx context.Context) error {
		if filepath.IsAbs(path) {
			if _, err := os.Stat(path); err != nil {
				return fmt.Errorf("socket missing: %w", err)
			}
		}
		return call(ctx)
	}
}
