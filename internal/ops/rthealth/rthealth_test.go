package rthealth

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestMonitor(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var probeErr error
	m := New("/run/c.sock", func(context.Context) error { return probeErr },
		Options{Logger: slog.New(slog.DiscardHandler), Now: func() time.Time { return now }})
	start := now
	if s := m.Status(); !s.Healthy || !s.LastConfirmed.Equal(start) || s.Address != "/run/c.sock" {
		t.Fatalf("initial status %+v", s)
	}
	steps := []struct {
		err              error
		healthy          bool
		since, confirmed time.Time
		changed          time.Time // when Healthy last flipped
		wantErr          string
	}{
		{err: nil, healthy: true, confirmed: start.Add(time.Second)},
		{err: errors.New("dial: no such file"), healthy: false, since: start.Add(2 * time.Second), confirmed: start.Add(time.Second),
			changed: start.Add(2 * time.Second), wantErr: "dial: no such file"},
		{err: errors.New("connection refused"), healthy: false, since: start.Add(2 * time.Second), confirmed: start.Add(time.Second),
			changed: start.Add(2 * time.Second), wantErr: "connection refused"},
		{err: nil, healthy: true, confirmed: start.Add(4 * time.Second), changed: start.Add(4 * time.Second)},
		{err: nil, healthy: true, confirmed: start.Add(5 * time.Second), changed: start.Add(4 * time.Second)},
	}
	for i, st := range steps {
		now = start.Add(time.Duration(i+1) * time.Second)
		probeErr = st.err
		m.Check(context.Background())
		s := m.Status()
		if s.Healthy != st.healthy || !s.Since.Equal(st.since) || !s.LastConfirmed.Equal(st.confirmed) || s.Err != st.wantErr || !s.Changed.Equal(st.changed) {
			t.Errorf("step %d: %+v, want healthy=%v since=%v confirmed=%v changed=%v err=%q", i, s, st.healthy, st.since, st.confirmed, st.changed, st.wantErr)
		}
	}
}

func TestCheckTimesOut(t *testing.T) {
	m := New("x", func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() },
		Options{Timeout: 10 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	m.Check(context.Background())
	if s := m.Status(); s.Healthy || s.Err != context.DeadlineExceeded.Error() {
		t.Fatalf("hung probe: %+v", s)
	}
}

func TestSocketProbe(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "c.sock")
	calls := 0
	probe := SocketProbe("unix://"+sock, func(context.Context) error { calls++; return nil })
	if err := probe(context.Background()); err == nil || !strings.HasPrefix(err.Error(), "socket missing: stat "+sock) || calls != 0 {
		t.Fatalf("missing socket: %v (%d calls)", err, calls)
	}
	if err := os.WriteFile(sock, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := probe(context.Background()); err != nil || calls != 1 {
		t.Fatalf("present socket: %v (%d calls)", err, calls)
	}
}

// TestRecentAnswerStandsInForProbe: a call containerd answered within the
// period confirms it without a probe, but only while healthy and not when
// it was the probe's own call.
func TestRecentAnswerStandsInForProbe(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		name          string
		answeredAgo   time.Duration // 0: never answered
		unhealthy     bool
		ownProbe      bool // the answer was the probe's own call, which ended just after it
		wantProbe     bool
		wantConfirmed time.Time
	}{
		{name: "never answered", wantProbe: true, wantConfirmed: now},
		{name: "answered 1s ago", answeredAgo: time.Second, wantConfirmed: now.Add(-time.Second)},
		{name: "answered a period ago", answeredAgo: 2 * time.Second, wantProbe: true, wantConfirmed: now},
		{name: "unhealthy, answered 1s ago", answeredAgo: time.Second, unhealthy: true, wantProbe: true, wantConfirmed: now},
		{name: "the last answer was the probe's own", answeredAgo: time.Second, ownProbe: true, wantProbe: true, wantConfirmed: now},
	} {
		t.Run(tc.name, func(t *testing.T) {
			probes := 0
			var probeErr error
			var answered time.Time
			if tc.answeredAgo > 0 {
				answered = now.Add(-tc.answeredAgo)
			}
			clock := now.Add(-time.Minute)
			m := New("x", func(context.Context) error { probes++; return probeErr }, Options{
				Period: 2 * time.Second, Logger: slog.New(slog.DiscardHandler),
				Now: func() time.Time { return clock }, Answered: func() time.Time { return answered },
			})
			if tc.unhealthy {
				probeErr = errors.New("down")
				m.Check(context.Background())
				probeErr, probes = nil, 0
			}
			if tc.ownProbe {
				clock = answered.Add(time.Millisecond)
				m.Check(context.Background())
				probes = 0
			}
			clock = now
			m.tick(context.Background())
			s := m.Status()
			if (probes == 1) != tc.wantProbe || probes > 1 {
				t.Errorf("probes %d, want probe %v", probes, tc.wantProbe)
			}
			if !s.Healthy || !s.LastConfirmed.Equal(tc.wantConfirmed) {
				t.Errorf("status %+v, want healthy, confirmed %v", s, tc.wantConfirmed)
			}
		})
	}
}
