package runtime

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/containerd/containerd/v2/pkg/cio"
	"golang.org/x/sys/unix"
)

// StdinPath is the FIFO the console of a container with stdin reads its
// input from (wellknown.LabelStdin), beside its log file logPath: the
// shim opens it when the task is created and copies what is written to
// it into the console, as for containerd's CRI. When the last writer
// closes it, the shim shuts the console down (the process gets end of
// input and a hangup): a podhost restart after an attach.
func StdinPath(logPath string) string { return strings.TrimSuffix(logPath, ".log") + ".stdin" }

// withStdin adds the container's stdin FIFO (made now, 0600) to its IO.
// Only a terminal takes it: the shim copies a FIFO to a console, but gives
// a non-terminal process with a log binary no stdin (the decoder refuses
// stdin without tty).
func withStdin(ioc cio.Creator, logPath string, terminal bool) cio.Creator {
	return func(id string) (cio.IO, error) {
		if !terminal || logPath == "" {
			return nil, errors.New("stdin needs a terminal (tty) and a log path")
		}
		path := StdinPath(logPath)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil { // the log driver's mode: it makes the dir only once the shim runs it
			return nil, fmt.Errorf("stdin fifo: %w", err)
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("stdin fifo: %w", err)
		}
		if err := unix.Mkfifo(path, 0o600); err != nil {
			return nil, fmt.Errorf("stdin fifo %s: %w", path, err)
		}
		i, err := ioc(id)
		if err != nil {
			return nil, err
		}
		return stdinIO{IO: i, stdin: path}, nil
	}
}

// stdinIO is an IO whose config names a stdin FIFO.
type stdinIO struct {
	cio.IO
	stdin string
}

func (s stdinIO) Config() cio.Config {
	c := s.IO.Config()
	c.Stdin = s.stdin
	return c
}

// ResizeConsole sets the size of the console of container id's task (an
// attach's terminal size).
func (r *Runtime) ResizeConsole(ctx context.Context, id string, width, height uint32) error {
	ctx = r.nsctx(ctx)
	c, err := r.client.LoadContainer(ctx, id)
	if err != nil {
		return fmt.Errorf("resize %s: %w", id, err)
	}
	task, err := c.Task(ctx, nil)
	if err != nil {
		return fmt.Errorf("resize %s: %w", id, err)
	}
	if err := task.Resize(ctx, width, height); err != nil {
		return fmt.Errorf("resize %s: %w", id, err)
	}
	return nil
}
