package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/term"

	"github.com/podhost/podhost/internal/clients/cmdutil"
	"github.com/podhost/podhost/internal/services/api"
)

// ExecOptions select a container and the command to run in it.
type ExecOptions struct {
	Socket, Namespace, Name, Container string
	Command                            []string
	Stdin                              bool // -i: pass the CLI's stdin to the command
	TTY                                bool // -t: allocate a TTY for the command
}

// Exec runs a command in a running container through the daemon, like
// `kubectl exec`, and returns the command's exit code. With Stdin and TTY
// and a terminal on stdin, the terminal is in raw mode while the command
// runs (keys, ^C included, go to the command). The pod may be named
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
	req := api.ExecRequest{Namespace: o.Namespace, Name: o.Name, Container: o.Container,
		Command: o.Command, Stdin: o.Stdin, TTY: o.TTY}
	if req.Container == "" {
		req.Container = cmdutil.DefaultContainer(ctx, c, o.Namespace, o.Name, s)
	}
	var stdin io.Reader
	if o.Stdin {
		stdin = s.In
		if o.TTY {
			restore, err := rawTerminal(s.In)
			if err != nil {
				return -1, err
			}
			defer restore()
		}
	}
	return c.Exec(ctx, req, stdin, s.Out, s.ErrOut)
}

// rawTerminal puts in in raw mode if it is a terminal and returns the
// function that restores it (a no-op otherwise).
func rawTerminal(in io.Reader) (func(), error) {
	f, ok := in.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return func() {}, nil
	}
	old, err := term.MakeRaw(int(f.Fd()))
	if err != nil {
		return nil, fmt.Errorf("put the terminal in raw mode: %w", err)
	}
	return func() { _ = term.Restore(int(f.Fd()), old) }, nil
}
