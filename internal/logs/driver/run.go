package driver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

// drainTimeout bounds how long the driver keeps draining after the shim
// asked it to stop (SIGTERM); the shim kills it after 12s anyway.
const drainTimeout = 5 * time.Second

// Streams are the container's output pipes as the shim hands them over.
type Streams struct {
	Stdout, Stderr io.Reader
}

// Func is one driver body: it must call ready once the log file is open
// and return when both streams hit EOF (or soon after ctx is cancelled).
type Func func(ctx context.Context, s Streams, ready func() error) error

// Main is the whole driver process: it parses os.Args, copies the
// container's stdout and stderr into the CRI log file until both reach
// EOF, then exits the process: 0, 1 after an error (said on stderr), or
// ExitBadArgs. It never returns. The shim gives it no PATH or HOME: it
// needs neither.
func Main() {
	cfg, err := ParseArgs(os.Args)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		// Still drain, or the container would die of SIGPIPE; then fail.
		code := run(discard)
		if code == 0 {
			code = ExitBadArgs
		}
		os.Exit(code)
	}
	os.Exit(run(Driver(cfg)))
}

// ExitBadArgs is the driver's exit status for an argv it refuses, once
// both streams are drained.
const ExitBadArgs = 2

// run implements the shim's side of the protocol (what containerd's
// core/runtime/v2/logging.Run does, without its dependencies): fds 3/4 are
// the streams, closing fd 5 signals readiness, SIGTERM asks to stop.
func run(fn Func) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM)
	go func() {
		<-sigs
		cancel()
	}()
	s := Streams{Stdout: os.NewFile(3, "CONTAINER_STDOUT"), Stderr: os.NewFile(4, "CONTAINER_STDERR")}
	wait := os.NewFile(5, "CONTAINER_WAIT")
	if err := fn(ctx, s, wait.Close); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// Driver returns the Func writing to cfg.Path. If the file cannot be
// opened the output is discarded (the container must not block on a full
// pipe), with the error on stderr (the shim's log).
func Driver(cfg Config) Func {
	return func(ctx context.Context, s Streams, ready func() error) error {
		w, err := OpenWriter(cfg)
		if err != nil {
			fmt.Fprintf(os.Stderr, "podhost-log-driver: cannot open log file, discarding output: %v\n", err)
			return discard(ctx, s, ready)
		}
		defer w.Close()
		if err := ready(); err != nil {
			return fmt.Errorf("logdriver: signal ready: %w", err)
		}
		return copyStreams(ctx, s, w.Copy)
	}
}

func discard(ctx context.Context, s Streams, ready func() error) error {
	if err := ready(); err != nil {
		return err
	}
	return copyStreams(ctx, s, func(_ string, r io.Reader) error {
		_, err := io.Copy(io.Discard, r)
		return err
	})
}

// copyStreams runs fn for both streams and returns when both hit EOF, or
// drainTimeout after ctx is cancelled (SIGTERM from the shim, which closes
// the pipes first, so EOF normally comes right away).
func copyStreams(ctx context.Context, s Streams, fn func(string, io.Reader) error) error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for stream, r := range map[string]io.Reader{Stdout: s.Stdout, Stderr: s.Stderr} {
		if r == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := fn(stream, r); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		select {
		case <-done:
		case <-time.After(drainTimeout):
			return errors.New("logdriver: streams not closed after stop request")
		}
	}
	mu.Lock()
	defer mu.Unlock()
	return errors.Join(errs...)
}
