package logs

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
)

// pollInterval is the safety net when inotify is unavailable or an event
// was missed (the directory may not exist yet, for one).
const pollInterval = time.Second

// follow prints new messages until ctx is done. cur is the open live file
// (nil if it did not exist yet).
func (r *reader) follow(ctx context.Context, cur *logFile) error {
	defer func() { cur.Close() }()
	watcher, err := fsnotify.NewWatcher()
	if err != nil {
		slog.Debug("logs: no fsnotify, polling", "err", err)
	} else {
		defer watcher.Close()
	}
	var events <-chan fsnotify.Event
	var errs <-chan error
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	var stop stopWatch
	for {
		if watcher != nil && events == nil && watcher.Add(filepath.Dir(r.path)) == nil {
			// the directory may appear only later: retried every round
			events, errs = watcher.Events, watcher.Errors
		}
		if cur == nil {
			if cur, err = openLog(r.path); err != nil {
				return err
			}
		}
		if cur != nil {
			if err := r.drain(cur); err != nil {
				return err
			}
			if r.rotated(cur) {
				// The writer no longer writes to cur: read what it wrote
				// before renaming it, then move on to the new file.
				if err := r.drain(cur); err != nil {
					return err
				}
				cur.Close()
				cur = nil
				continue
			}
		}
		if stop.over(r) {
			return r.sink.flush() // a partial message left: printed, as without -f
		}
		select {
		case <-ctx.Done():
			return nil
		case <-events:
		case err := <-errs: // watcher trouble: the ticker keeps us going
			_ = err
		case <-tick.C:
		}
	}
}

// stopWatch ends a follow once its container stopped and the log stopped
// growing: the container's log driver writes what the container wrote
// before it exited for a moment after the exit is seen.
type stopWatch struct {
	checked time.Time // last call of Running: at most one per poll interval
	at      time.Time // when the container was seen stopped (zero: running)
	lines   int       // r.lines then
}

func (w *stopWatch) over(r *reader) bool {
	if r.running == nil {
		return false
	}
	now := time.Now()
	if w.at.IsZero() || r.lines != w.lines {
		if now.Sub(w.checked) < pollInterval && w.at.IsZero() {
			return false
		}
		w.checked = now
		if r.running() {
			w.at = time.Time{}
			return false
		}
		w.at, w.lines = now, r.lines // (again, when lines still arrive)
		return false
	}
	return now.Sub(w.at) >= pollInterval
}

// rotated reports whether r.path no longer names the file cur reads.
func (r *reader) rotated(cur *logFile) bool {
	st, err := os.Stat(r.path)
	if err != nil {
		return true
	}
	cst, err := cur.f.Stat()
	if err != nil {
		return true
	}
	return !os.SameFile(st, cst)
}
