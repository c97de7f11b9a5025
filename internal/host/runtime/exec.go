package runtime

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"sync"
	"syscall"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/containerd/containerd/v2/pkg/oci"
	"github.com/containerd/errdefs"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/podhost/podhost/internal/model/runtimeapi"
)

// Exec runs cmd in the running container with the container's process
// settings (user, env, cwd, capabilities, ...) and returns its exit code.
// stdin may be nil; when it ends, the process's stdin is closed. With tty
// the output comes on stdout only. If ctx is cancelled the process is
// killed and ctx's error returned.
func (r *Runtime) Exec(ctx context.Context, id string, cmd []string, stdin io.Reader, stdout, stderr io.Writer, tty bool) (int, error) {
	return r.ExecWith(ctx, id, cmd, ExecOptions{Stdin: stdin, Stdout: stdout, Stderr: stderr, TTY: tty})
}

// ExecOptions are an exec's streams and terminal.
type ExecOptions struct {
	Stdin          io.Reader // nil: none
	Stdout, Stderr io.Writer
	// TTY runs the process on a terminal (output on Stdout only), with
	// TERM=xterm in its environment, replacing the container's, as
	// containerd's CRI exec does.
	TTY bool
	// Resize, with TTY, delivers the terminal's sizes: the process's
	// console is resized to each (CRI's handleResizing: zero sizes are
	// skipped). Read until closed or the exec ends.
	Resize <-chan runtimeapi.TerminalSize
}

// ExecWith is Exec with a terminal that can be resized (kubectl exec -t).
func (r *Runtime) ExecWith(ctx context.Context, id string, cmd []string, o ExecOptions) (int, error) {
	ctx = r.nsctx(ctx)
	if len(cmd) == 0 {
		return -1, fmt.Errorf("exec in %s: empty command: %w", id, errdefs.ErrInvalidArgument)
	}
	c, err := r.client.LoadContainer(ctx, id)
	if err != nil {
		return -1, fmt.Errorf("exec in %s: %w", id, err)
	}
	spec, err := c.Spec(ctx)
	if err != nil {
		return -1, fmt.Errorf("exec in %s: spec: %w", id, err)
	}
	task, err := c.Task(ctx, nil)
	if err != nil {
		return -1, fmt.Errorf("exec in %s: task: %w", id, err)
	}
	pspec, err := execProcess(ctx, spec, cmd, o)
	if err != nil {
		return -1, fmt.Errorf("exec in %s: %w", id, err)
	}
	in := newStdinCloser(o.Stdin)
	opts := []cio.Opt{cio.WithStreams(in.reader(), o.Stdout, o.Stderr)}
	if o.TTY {
		opts = append(opts, cio.WithTerminal)
	}
	// Creating and starting are not cancelled with ctx: a call cancelled
	// while the shim carries it out leaves a process podhost no longer
	// tracks (seen: a Start cancelled in flight, its process then running
	// and refused deletion). ctx ending after the start kills the process.
	uctx, ucancel := context.WithTimeout(context.WithoutCancel(ctx), execSetupTimeout)
	defer ucancel()
	proc, err := task.Exec(uctx, newExecID(), pspec, cio.NewCreator(opts...))
	in.setProcess(ctx, proc)
	if err != nil {
		return -1, fmt.Errorf("exec in %s: %w", id, err)
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if _, err := proc.Delete(dctx, client.WithProcessKill); err != nil && !errdefs.IsNotFound(err) {
			r.log().Warn("delete exec process", "container", id, "err", err)
		}
	}()
	if !o.TTY {
		o.Resize = nil
	}
	return r.waitExec(ctx, uctx, id, proc, o.Resize)
}

// execProcess is the exec's process: the container's, running cmd; with a
// TTY, TERM=xterm (containerd's CRI exec) and the client's first size.
func execProcess(ctx context.Context, spec *oci.Spec, cmd []string, o ExecOptions) (*specs.Process, error) {
	if o.TTY {
		if err := oci.WithEnv([]string{"TERM=xterm"})(ctx, nil, nil, spec); err != nil {
			return nil, fmt.Errorf("TERM: %w", err)
		}
	}
	pspec := *spec.Process
	pspec.Args, pspec.Terminal = cmd, o.TTY
	if o.TTY && o.Resize != nil {
		// The terminal's size from the start, not a resize after it: a
		// command that reads it at once (stty size, a shell's first
		// prompt) would see 0x0 (runc sizes the console from the spec).
		if sz, ok := firstSize(ctx, o.Resize); ok {
			pspec.ConsoleSize = &specs.Box{Height: uint(sz.Height), Width: uint(sz.Width)}
		}
	}
	return &pspec, nil
}

// execSetupTimeout bounds creating and starting an exec process.
const execSetupTimeout = time.Minute

// waitExec starts proc (with uctx, not cancelled with ctx) and waits for
// its exit, or kills it when ctx ends.
func (r *Runtime) waitExec(ctx, uctx context.Context, id string, proc client.Process, resize <-chan runtimeapi.TerminalSize) (int, error) {
	statusC, err := proc.Wait(context.WithoutCancel(ctx))
	if err != nil {
		return -1, fmt.Errorf("exec: wait: %w", err)
	}
	if err := proc.Start(uctx); err != nil {
		return -1, fmt.Errorf("exec: start: %w", err)
	}
	if resize != nil {
		done := make(chan struct{})
		defer close(done)
		go r.resizeExec(ctx, id, proc, resize, done)
	}
	select {
	case st := <-statusC:
		code, _, err := st.Result()
		if err != nil {
			return -1, fmt.Errorf("exec: %w", err)
		}
		drainIO(proc)
		return int(code), nil
	case <-ctx.Done():
		kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = proc.Kill(kctx, syscall.SIGKILL)
		return -1, ctx.Err()
	}
}

// resizeExec applies the sizes from resize to the process's console until
// resize is closed or done is.
func (r *Runtime) resizeExec(ctx context.Context, id string, proc client.Process, resize <-chan runtimeapi.TerminalSize, done <-chan struct{}) {
	for {
		select {
		case <-done:
			return
		case sz, ok := <-resize:
			if !ok {
				return
			}
			if sz.Width == 0 || sz.Height == 0 {
				continue
			}
			if err := proc.Resize(ctx, uint32(sz.Width), uint32(sz.Height)); err != nil {
				r.log().Debug("resize exec console", "container", id, "err", err)
			}
		}
	}
}

// drainIO waits until the process's output has been copied to the caller's
// writers: the exit status can arrive before the last bytes do, and Delete
// cancels the copy. A child that outlives the process and keeps the output
// open must not hold Exec forever: the wait is bounded.
func drainIO(proc client.Process) {
	done := make(chan struct{})
	go func() {
		if io := proc.IO(); io != nil {
			io.Wait()
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
	}
}

func newExecID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return "exec-" + hex.EncodeToString(b)
}

// stdinCloser wraps the caller's stdin: at its EOF it asks the shim to close
// the process's stdin (the shim holds the fifo open otherwise).
type stdinCloser struct {
	r     io.Reader
	ready chan struct{}
	once  sync.Once
	ctx   context.Context
	proc  client.Process
}

func newStdinCloser(r io.Reader) *stdinCloser {
	return &stdinCloser{r: r, ready: make(chan struct{})}
}

func (s *stdinCloser) reader() io.Reader {
	if s.r == nil {
		return nil
	}
	return s
}

// setProcess publishes the process (nil if Exec failed).
func (s *stdinCloser) setProcess(ctx context.Context, p client.Process) {
	s.ctx, s.proc = ctx, p
	close(s.ready)
}

func (s *stdinCloser) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if errors.Is(err, io.EOF) {
		s.once.Do(func() {
			<-s.ready
			if s.proc != nil {
				_ = s.proc.CloseIO(context.WithoutCancel(s.ctx), client.WithStdinCloser)
			}
		})
	}
	return n, err
}

// initialSizeWait bounds how long an exec with a terminal waits for the
// client's first size (kubectl sends it as the stream opens).
const initialSizeWait = time.Second

// firstSize is the first non-zero size from resize, if one comes within
// initialSizeWait.
func firstSize(ctx context.Context, resize <-chan runtimeapi.TerminalSize) (runtimeapi.TerminalSize, bool) {
	t := time.NewTimer(initialSizeWait)
	defer t.Stop()
	for {
		select {
		case sz, ok := <-resize:
			if !ok {
				return sz, false
			}
			if sz.Width != 0 && sz.Height != 0 {
				return sz, true
			}
		case <-t.C:
			return runtimeapi.TerminalSize{}, false
		case <-ctx.Done():
			return runtimeapi.TerminalSize{}, false
		}
	}
}
