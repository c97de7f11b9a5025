package stream

import (
	"context"
	"log/slog"

	"k8s.io/klog/v2"
)

// RouteKlog sends klog's output to log, at debug level. The upstream
// streaming code logs through klog, at error level also for a normal end
// ("Error on socket receive ... use of closed network connection" when a
// session closes); the Server logs what matters itself. Call it once, at
// start (klog's logger is process-wide).
func RouteKlog(log *slog.Logger) {
	klog.SetSlogLogger(slog.New(debugHandler{log.Handler()}))
}

// debugHandler lowers every record above debug to debug.
type debugHandler struct{ h slog.Handler }

func (d debugHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return d.h.Enabled(ctx, min(l, slog.LevelDebug))
}

// Handle also checks Enabled: logr hands errors over unasked.
func (d debugHandler) Handle(ctx context.Context, r slog.Record) error {
	r.Level = min(r.Level, slog.LevelDebug)
	if !d.h.Enabled(ctx, r.Level) {
		return nil
	}
	return d.h.Handle(ctx, r)
}

func (d debugHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return debugHandler{d.h.WithAttrs(attrs)}
}

func (d debugHandler) WithGroup(name string) slog.Handler { return debugHandler{d.h.WithGroup(name)} }
