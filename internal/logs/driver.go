package logs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/containerd/containerd/v2/core/runtime/v2/logging"
)

// DriverCommand is the hidden subcommand of the podhost binary that runs
// the log driver. The shim runs the binary given to cio.BinaryIO as
//
//	<binary> log-driver <encoded DriverConfig>
//
// with fds 3/4 = container stdout/stderr, fd 5 = readiness pipe and an
// environment of only CONTAINER_ID and CONTAINER_NAMESPACE.
const DriverCommand = "log-driver"

// driverDrainTimeout bounds how long the driver keeps draining after the
// shim asked it to stop (SIGTERM); the shim kills it after 12s anyway.
const driverDrainTimeout = 5 * time.Second

// DriverConfig is what the log driver needs; it travels in the binary URI.
type DriverConfig = WriterConfig

// DriverArgs returns the args map for cio.BinaryIO. The shim turns the URI
// query into argv as "key value" pairs in map order (random), so all
// settings travel in ONE key: argv is always [DriverCommand, encoded].
func DriverArgs(cfg DriverConfig) map[string]string {
	q := url.Values{}
	q.Set("path", cfg.Path)
	q.Set("max-size", strconv.FormatInt(cfg.MaxSize, 10))
	q.Set("max-files", strconv.Itoa(cfg.MaxFiles))
	return map[string]string{DriverCommand: q.Encode()}
}

// ParseDriverArgs finds DriverCommand in args (e.g. os.Args) and decodes
// the argument that follows it.
func ParseDriverArgs(args []string) (DriverConfig, error) {
	var cfg DriverConfig
	i := 0
	for i < len(args) && args[i] != DriverCommand {
		i++
	}
	if i+1 >= len(args) {
		return cfg, fmt.Errorf("logs: %q argument missing", DriverCommand)
	}
	q, err := url.ParseQuery(args[i+1])
	if err != nil {
		return cfg, fmt.Errorf("logs: driver args: %w", err)
	}
	cfg.Path = q.Get("path")
	if cfg.Path == "" {
		return cfg, errors.New("logs: driver args: path missing")
	}
	if v := q.Get("max-size"); v != "" {
		if cfg.MaxSize, err = strconv.ParseInt(v, 10, 64); err != nil {
			return cfg, fmt.Errorf("logs: driver args: max-size: %w", err)
		}
	}
	if v := q.Get("max-files"); v != "" {
		if cfg.MaxFiles, err = strconv.Atoi(v); err != nil {
			return cfg, fmt.Errorf("logs: driver args: max-files: %w", err)
		}
	}
	return cfg, nil
}

// RunDriver is the body of `podhost log-driver`: it parses os.Args, copies
// the container's stdout and stderr into the CRI log file until both reach
// EOF, then exits the process. It never returns. It must run before any
// config loading or daemon setup: the shim gives it no PATH or HOME.
func RunDriver() {
	cfg, err := ParseDriverArgs(os.Args)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		// Still drain, or the container would die of SIGPIPE.
		logging.Run(discardDriver)
		return
	}
	logging.Run(Driver(cfg))
}

// Driver returns the logging.LoggerFunc writing to cfg.Path.
func Driver(cfg DriverConfig) logging.LoggerFunc {
	return func(ctx context.Context, lc *logging.Config, ready func() error) error {
		w, err := OpenWriter(cfg)
		if err != nil {
			slog.Error("log driver: cannot open log file, discarding output", "path", cfg.Path, "err", err)
			return discardDriver(ctx, lc, ready)
		}
		defer w.Close()
		if err := ready(); err != nil {
			return fmt.Errorf("logs: signal ready: %w", err)
		}
		return copyStreams(ctx, lc, func(stream string, r io.Reader) error {
			return w.Copy(stream, r)
		})
	}
}

func discardDriver(ctx context.Context, lc *logging.Config, ready func() error) error {
	if err := ready(); err != nil {
		return err
	}
	return copyStreams(ctx, lc, func(_ string, r io.Reader) error {
		_, err := io.Copy(io.Discard, r)
		return err
	})
}

// copyStreams runs fn for both streams and returns when both hit EOF, or
// driverDrainTimeout after ctx is cancelled (SIGTERM from the shim, which
// closes the pipes first, so EOF normally comes right away).
func copyStreams(ctx context.Context, lc *logging.Config, fn func(string, io.Reader) error) error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for stream, r := range map[string]io.Reader{Stdout: lc.Stdout, Stderr: lc.Stderr} {
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
		case <-time.After(driverDrainTimeout):
			return errors.New("logs: streams not closed after stop request")
		}
	}
	mu.Lock()
	defer mu.Unlock()
	return errors.Join(errs...)
}
