package imagesdir

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Run does a first pass (then Ready is closed), and another one each time
// the directory changed and was quiet for Config.Debounce. It returns nil
// when ctx is done, an error when the directory cannot be watched (a
// missing directory is created, 0700).
func (l *Loader) Run(ctx context.Context) error {
	defer l.markReady()
	if err := os.MkdirAll(l.cfg.Dir, 0o700); err != nil {
		return fmt.Errorf("images dir: %w", err)
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("images dir: watch: %w", err)
	}
	defer w.Close()
	if err := w.Add(l.cfg.Dir); err != nil {
		return fmt.Errorf("images dir: watch %s: %w", l.cfg.Dir, err)
	}
	l.pass(ctx, true)
	l.markReady()
	timer := time.NewTimer(0)
	<-timer.C
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return nil
			}
			if ev.Op == fsnotify.Chmod && !IsArchiveName(baseName(ev.Name)) {
				continue
			}
			timer.Reset(l.cfg.Debounce)
		case err, ok := <-w.Errors:
			if !ok {
				return nil
			}
			l.cfg.Logger.Warn("images dir: watch", "err", err)
			timer.Reset(l.cfg.Debounce) // events may be lost: read it again
		case <-timer.C:
			l.pass(ctx, false)
		}
	}
}

// pass runs Sync and reports it.
func (l *Loader) pass(ctx context.Context, first bool) {
	res, err := l.Sync(ctx)
	l.mu.Lock()
	l.dirErr = nil
	if err != nil && ctx.Err() == nil {
		l.dirErr = &FileError{File: l.cfg.Dir, Err: err}
	}
	l.mu.Unlock()
	if err != nil {
		if ctx.Err() == nil {
			l.cfg.Logger.Error(err.Error())
		}
		return
	}
	if first || len(res.Imported) > 0 {
		l.cfg.Logger.Info("images dir read", "dir", l.cfg.Dir, "imported", len(res.Imported), "skipped", len(res.Skipped),
			"failed", len(res.Errors), "took", res.Took.Round(time.Microsecond))
	}
	if len(res.Images) > 0 && l.cfg.Imported != nil {
		l.cfg.Imported(res.Images)
	}
}

func (l *Loader) markReady() { l.once.Do(func() { close(l.ready) }) }

func baseName(p string) string {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '/' {
			return p[i+1:]
		}
	}
	return p
}
