package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"syscall"
	"time"
)

// StacksFilePrefix starts the name of the goroutine dump SIGUSR1 writes.
const StacksFilePrefix = "goroutine-stacks-"

// dumpStacksOnSignal writes every goroutine's stack to
// <dir>/goroutine-stacks-<time>.log on each SIGUSR1, as dockerd does (and
// containerd and its shims, to their logs), and logs the file's path: what
// a stuck pod worker waits on, without stopping the daemon.
func dumpStacksOnSignal(ctx context.Context, dir string, log *slog.Logger) {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGUSR1)
	defer signal.Stop(sigs)
	for {
		select {
		case <-ctx.Done():
			return
		case <-sigs:
			if path, err := dumpStacks(dir, time.Now()); err != nil {
				log.Warn("goroutine stack dump", "err", err)
			} else {
				log.Info("goroutine stacks written", "path", path)
			}
		}
	}
}

func dumpStacks(dir string, now time.Time) (string, error) {
	path := filepath.Join(dir, StacksFilePrefix+now.UTC().Format("20060102T150405.000000000Z")+".log")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", fmt.Errorf("dump stacks: %w", err)
	}
	_, err = f.Write(allStacks())
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("dump stacks to %s: %w", path, err)
	}
	return path, nil
}

// allStacks is every goroutine's stack in the panic format, wait times
// included (what runtime/pprof's goroutine profile writes at debug=2; that
// package is not linked into the daemon: its memory profile would make the
// runtime keep a sampled allocation profile, docs/decisions.md 16).
// Like pprof's, it stops growing its buffer at 64 MiB (the dump is then
// cut short).
func allStacks() []byte {
	const maxDump = 64 << 20
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) || len(buf) >= maxDump {
			return buf[:n]
		}
		buf = make([]byte, 2*len(buf))
	}
}
