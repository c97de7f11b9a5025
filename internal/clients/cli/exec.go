package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/term"

	"github.com/podhost/podhost/internal/clients/cmdutil"
	"github.com/podhost/podhost/internal/model/runtimeapi"
	"github.com/podhost/podhost/internal/services/api"
)

// ExecOptions select a container and the command to run in it.
type ExecOptions struct {
	Socket, Namespace, Name, Container string
	Command                            []string
	Stdin                              bool // -i: pass the CLI's stdin to the command
	TTY                                bool // -t: with -i and a terminal on stdin, run the command on a TTY
}

// Exec runs a command in a running container through the daemon, like
// `kubectl exec`, and returns the command's exit code. The TTY is
// kubectl's (its SetupTTY): only with Stdin, and only when stdin is a
// terminal — else kubectl's "Unable to use a TTY" warning and none. On a
// TTY the local terminal is in raw mode while the command runs (keys, ^C
// included, go to the command), the command's terminal has the size of
// ours (stdout's) from the start and follows its resizes (SIGWINCH), and
// TERM=xterm (the daemon's, as containerd's CRI exec). The pod may be named
// pod/NAME, as with kubectl; a missing one is a NotFoundError.
func Exec(ctx context.Context, o ExecOptions, s cmdutil.IOStreams) (int, error) {
	name, err := podArg(o.Name)
	if err != nil {
		return -1, err
	}
	o.Name = name
	code, err := o.exec(ctx, s)
	return code, cmdutil.PodNotFound(err, o.Name)
}

func (o ExecOptions) exec(ctx context.Context, s cmdutil.IOStreams) (int, error) {
	if len(o.Command) == 0 {
		return -1, errors.New("you must specify at least one command for the container")
	}
	if err := cmdutil.ValidateNames(o.Namespace, o.Name); err != nil {
		return -1, err
	}
	c := api.NewClient(o.Socket)
	req := api.ExecRequest{Namespace: o.Namespace, Name: o.Name, Container: o.Container, Command: o.Command, Stdin: o.Stdin}
	if req.Container == "" {
		req.Container = cmdutil.DefaultContainer(ctx, c, o.Namespace, o.Name, s)
	}
	req.TTY = o.TTY && o.Stdin
	if req.TTY && terminalFd(s.In) < 0 {
		fmt.Fprintln(s.ErrOut, "Unable to use a TTY - input is not a terminal or the right kind of file")
		req.TTY = false
	}
	var stdin io.Reader
	if o.Stdin {
		stdin = s.In
	}
	if req.TTY {
		restore, err := rawTerminal(terminalFd(s.In))
		if err != nil {
			return -1, err
		}
		defer restore()
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx) // ends watchSize with the exec
		defer cancel()
		if out := terminalFd(s.Out); out >= 0 {
			req.Resize = watchSize(ctx, out, &req)
		}
	}
	return c.Exec(ctx, req, stdin, s.Out, s.ErrOut)
}

// terminalFd is f's descriptor if it is a terminal, else -1.
func terminalFd(f any) int {
	file, ok := f.(*os.File)
	if !ok || !term.IsTerminal(int(file.Fd())) {
		return -1
	}
	return int(file.Fd())
}

// rawTerminal puts the terminal fd in raw mode and returns the function
// that restores it.
func rawTerminal(fd int) (func(), error) {
	old, err := term.MakeRaw(fd)
	if err != nil {
		return nil, fmt.Errorf("put the terminal in raw mode: %w", err)
	}
	return func() { _ = term.Restore(fd, old) }, nil
}

// watchSize sets req's size to the terminal fd's and returns the channel
// of its later sizes (kubectl's MonitorSize): read at each SIGWINCH until
// ctx ends. Only the newest size waits to be sent.
func watchSize(ctx context.Context, fd int, req *api.ExecRequest) <-chan runtimeapi.TerminalSize {
	if w, h, err := term.GetSize(fd); err == nil {
		req.Width, req.Height = uint16(w), uint16(h)
	}
	winch := make(chan os.Signal, 1)
	signal.Notify(winch, syscall.SIGWINCH)
	sizes := make(chan runtimeapi.TerminalSize, 1)
	go func() {
		defer signal.Stop(winch)
		for {
			select {
			case <-ctx.Done():
				return
			case <-winch:
			}
			w, h, err := term.GetSize(fd)
			if err != nil {
				continue
			}
			select {
			case <-sizes: // not sent yet: replaced
			default:
			}
			sizes <- runtimeapi.TerminalSize{Width: uint16(w), Height: uint16(h)}
		}
	}()
	return sizes
}
