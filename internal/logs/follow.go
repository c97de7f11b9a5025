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
	var stopAt time.Time // set once the container is seen stopped
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
		if r.stopped(&stopAt) {
			return nil
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

// stopped reports whether the follow is over: the container was seen
// stopped at least a poll interval ago (*stopAt), so what its log driver
// wrote after the exit has been read.
func (r *reader) stopped(stopAt *time.Time) bool {
	if r.running == nil {
		return false
	}
	if stopAt.IsZero() {
		if !r.running() {
			*stopAt = time.Now().Add(pollInterval)
		}
		return false
	}
	return !time.Now().Before(*stopAt)
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
