package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/podhost/podhost/internal/clients/cli"
)

func newExecCmd(g *globalOptions) *cobra.Command {
	var opts cli.ExecOptions
	cmd := &cobra.Command{
		Use:   "exec NAME|pod/NAME -- COMMAND [ARG...]",
		Short: "Run a command in a running container",
		Long: "Run a command in a running container of a pod, like kubectl exec. podhost exits with\n" +
			"the command's exit code (and prints \"command terminated with exit code N\" if not 0).",
		Example: "  podhost exec web -- ls /\n  podhost exec pod/web -c sidecar -- cat /etc/hosts\n" +
			"  podhost exec -it web -- sh\n  echo hi | podhost exec -i web -- cat",
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: completeNames(g, &opts.Namespace, podFirstArg),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := g.config(cmd)
			if err != nil {
				return err
			}
			dash := cmd.ArgsLenAtDash()
			switch {
			case dash < 0 && len(args) > 1:
				return &usageError{err: errors.New("exec NAME COMMAND is not supported; use exec NAME -- COMMAND"), command: cmd.CommandPath()}
			case dash != 1 && dash >= 0:
				return &usageError{err: errors.New("exactly one pod NAME must come before --"), command: cmd.CommandPath()}
			}
			opts.Socket, opts.Name, opts.Command = cfg.Socket, args[0], args[1:]
			return commandResult(cli.Exec(cmd.Context(), opts, g.streams))
		},
	}
	f := cmd.Flags()
	f.StringVarP(&opts.Namespace, "namespace", "n", "default", "the pod's namespace")
	f.StringVarP(&opts.Container, "container", "c", "", "container name (default: the kubectl.kubernetes.io/default-container annotation's, else the first)")
	f.BoolVarP(&opts.Stdin, "stdin", "i", false, "pass stdin to the command")
	f.BoolVarP(&opts.TTY, "tty", "t", false, "with -i, when stdin is a terminal: run the command on a TTY of this terminal's size (raw mode, resizes followed, TERM=xterm), as kubectl")
	return cmd
}

// commandResult is what a command run in a container (exec, cp's tar)
// makes podhost return: err, else an exitCodeError if code is not 0.
func commandResult(code int, err error) error {
	if err == nil && code != 0 {
		return &exitCodeError{code: code}
	}
	return err
}

// exitCodeError makes podhost exit with a command's non-zero exit code; run
// prints it as kubectl does ("command terminated with exit code N").
type exitCodeError struct{ code int }

func (e *exitCodeError) Error() string {
	return fmt.Sprintf("command terminated with exit code %d", e.code)
}
