// Command podhost runs Kubernetes Pod manifests on one machine through
// containerd, and is its own CLI.
//
// This package is thin: each command is a newXxxCmd(*globalOptions) in its
// own file that parses flags into an options struct and calls one function
// (of a package in internal/clients, or the daemon). Commands are registered
// in the commands list below. docs/cli/podhost*.md is generated from them
// (make docs; docs_test.go checks it).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/podhost/podhost/internal/clients/cmdutil"
	"github.com/podhost/podhost/internal/config"
	"github.com/podhost/podhost/internal/host/sandbox/pause"
	"github.com/podhost/podhost/internal/logs"
)

// commands are podhost's subcommands, in help order.
var commands = []func(*globalOptions) *cobra.Command{
	newDaemonCmd,
	newApplyCmd,
	newDeleteCmd,
	newGetCmd,
	newDescribeCmd,
	newLogsCmd,
	newEventsCmd,
	newRolloutCmd,
	newTopCmd,
	newExecCmd,
	newCpCmd,
	newWaitCmd,
	newImagesCmd,
	newManifestsCmd,
	newCheckCmd,
	newKubeconfigCmd,
	newJoinCmd,
	newVersionCmd,
}

// globalOptions carries the global flags and the streams to every command.
type globalOptions struct {
	streams    cmdutil.IOStreams
	configPath string         // --config; "" = the default path, may be missing
	flags      *config.Config // values of config-backed flags (global and daemon)
	args       []string       // as typed after "podhost" (kubectl hints)
}

// config loads the config file and merges the flags the user set on cmd
// (its own and the inherited global ones): defaults < file < flags.
func (g *globalOptions) config(cmd *cobra.Command) (*config.Config, error) {
	return config.Resolve(g.configPath, g.flags, cmd.Flags())
}

func newRootCmd(g *globalOptions) *cobra.Command {
	root := &cobra.Command{
		Use:   "podhost",
		Short: "Run Kubernetes Pod manifests on this machine with containerd",
		Long: "podhost runs the Kubernetes Pod manifests in its manifest directory\n" +
			"(" + config.DefaultManifestDir + ") through containerd, without a cluster.",
		// Errors are printed by run, as "Error: ..." on stderr; flag errors
		// add a pointer to --help instead of dumping the usage.
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		if name, ok := strings.CutPrefix(err.Error(), "unknown flag: --"); ok && kubectlOnlyFlags[name] {
			return kubectlHint(cmd.Name()+" --"+name, afterFirst(cmd.Root().PersistentFlags(), g.args))
		}
		return &usageError{err: err, command: cmd.CommandPath()}
	})
	root.SetIn(g.streams.In)
	root.SetOut(g.streams.Out)
	root.SetErr(g.streams.ErrOut)
	g.flags.BindGlobalFlags(root.PersistentFlags(), &g.configPath)
	for _, newCmd := range commands {
		root.AddCommand(newCmd(g))
	}
	return root
}

// run executes podhost with args and returns the exit code.
func run(ctx context.Context, args []string, streams cmdutil.IOStreams) int {
	g := &globalOptions{streams: streams, flags: config.Default()}
	root := newRootCmd(g)
	g.args = args
	if err := checkCommand(root, args); err != nil {
		printError(streams.ErrOut, err)
		return 1
	}
	root.SetArgs(args)
	if err := root.ExecuteContext(ctx); err != nil {
		if se := (*silentExitError)(nil); errors.As(err, &se) {
			return se.code
		}
		if ec := (*exitCodeError)(nil); errors.As(err, &ec) {
			fmt.Fprintln(streams.ErrOut, ec.Error())
			return ec.code
		}
		printError(streams.ErrOut, err)
		return 1
	}
	return 0
}

// checkCommand refuses, before cobra runs anything, a kubectl command
// podhost does not have (kubectlCommand: the hint) and an unknown
// subcommand (unknownCommand).
func checkCommand(root *cobra.Command, args []string) error {
	if err := kubectlCommand(root, args); err != nil {
		return err
	}
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd(args...)
	return unknownCommand(root, args)
}

// usageError is a command-line usage mistake (bad flag, unknown command).
type usageError struct {
	err     error
	command string
	more    []string // printed as they are after the error line (cobra's suggestions)
}

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// printError prints every line of err as "Error: <line>", and a missing
// object's as kubectl does: "Error from server (NotFound): <line>".
func printError(w io.Writer, err error) {
	if errors.Is(err, context.Canceled) {
		fmt.Fprintln(w, "Error: interrupted")
		return
	}
	for _, line := range errorLines(err) {
		fmt.Fprintln(w, line)
	}
	if ue := (*usageError)(nil); errors.As(err, &ue) {
		for _, line := range ue.more {
			fmt.Fprintln(w, line)
		}
		fmt.Fprintf(w, "See '%s --help' for usage.\n", ue.command)
	}
}

// errorLines is err as printed: each error errors.Join joined in turn (a
// NotFoundError in kubectl's words), the others line by line after "Error: ".
func errorLines(err error) []string {
	if nf, ok := err.(*cmdutil.NotFoundError); ok {
		return []string{"Error from server (NotFound): " + nf.Error()}
	}
	if joined, ok := err.(interface{ Unwrap() []error }); ok && joinedText(joined.Unwrap()) == err.Error() {
		var lines []string
		for _, e := range joined.Unwrap() {
			lines = append(lines, errorLines(e)...)
		}
		return lines
	}
	var lines []string
	for _, line := range strings.Split(strings.TrimRight(err.Error(), "\n"), "\n") {
		lines = append(lines, "Error: "+line)
	}
	return lines
}

// joinedText is the text errors.Join gives errs (fmt.Errorf's errors with
// several %w unwrap to a list too, but their text is not one per line).
func joinedText(errs []error) string {
	texts := make([]string, len(errs))
	for i, e := range errs {
		texts[i] = e.Error()
	}
	return strings.Join(texts, "\n")
}

func main() {
	// The containerd shim runs this binary as the container log driver (the
	// fallback when podhost-log-driver is not installed) with an empty
	// environment: handle that before cobra or any config loading.
	if len(os.Args) > 1 && os.Args[1] == logs.DriverCommand {
		logs.RunDriver() // never returns
	}
	// PID 1 of a pod's shared PID namespace, when podhost-pause is not
	// installed (internal/host/sandbox.ResolvePause).
	if len(os.Args) > 1 && os.Args[1] == pause.Command {
		pause.Main() // never returns
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], cmdutil.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr})
	stop()
	os.Exit(code)
}
