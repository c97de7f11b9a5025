package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/podhost/podhost/internal/clients/cmdutil"
)

// kubectlOnly are kubectl's commands podhost does not have: the real
// kubectl runs them against the daemon's Kubernetes API (`podhost
// kubeconfig`; docs/decisions.md: podhost does not embed kubectl's command
// tree). Keyed by the words typed after "podhost".
var kubectlOnly = map[string]bool{
	"edit": true, "diff": true, "explain": true, "label": true, "annotate": true, "patch": true,
	"replace": true, "create": true, "run": true, "port-forward": true, "attach": true, "debug": true,
	"api-resources": true, "api-versions": true, "expose": true, "set": true, "proxy": true,
	"top node": true, "top nodes": true, "top no": true,
}

// kubectlOnlyFlags are flags of kubectl's get that podhost's lacks.
var kubectlOnlyFlags = map[string]bool{"field-selector": true, "template": true, "output-watch-events": true, "watch-only": true}

// kubectlHint is the one line podhost prints for a kubectl command it does
// not have (name: its words): the command to run instead (typed: as the
// user typed it after "podhost", global flags aside).
func kubectlHint(name string, typed []string) error {
	return cmdutil.KubectlHint(name, strings.Join(typed, " "))
}

// kubectlCommand returns the hint for args (as typed after "podhost") when
// they name one of kubectlOnly's commands, else nil. Global flags before
// the command are skipped; the command's own flags (kubectl's) are not
// looked at.
func kubectlCommand(root *cobra.Command, args []string) error {
	rest := afterFirst(root.PersistentFlags(), args)
	words := positional(root.PersistentFlags(), rest)
	switch {
	case len(words) == 0:
		return nil
	case kubectlOnly[words[0]]:
		return kubectlHint(words[0], rest)
	case len(words) > 1 && kubectlOnly[words[0]+" "+words[1]]:
		return kubectlHint(words[0]+" "+words[1], rest)
	}
	return nil
}

// positional is args without the flags fs knows (and their values).
func positional(fs *pflag.FlagSet, args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return append(out, args[i+1:]...)
		case strings.HasPrefix(a, "-") && len(a) > 1:
			if takesValue(fs, a) {
				i++
			}
		default:
			out = append(out, a)
		}
	}
	return out
}

// afterFirst is args from the first positional word on.
func afterFirst(fs *pflag.FlagSet, args []string) []string {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") || a == "-" {
			return args[i:]
		}
		if takesValue(fs, a) {
			i++
		}
	}
	return nil
}

// takesValue reports whether flag a (as typed) is one of fs's that takes
// its value from the next argument.
func takesValue(fs *pflag.FlagSet, a string) bool {
	if strings.Contains(a, "=") {
		return false
	}
	var f *pflag.Flag
	if name, ok := strings.CutPrefix(a, "--"); ok {
		f = fs.Lookup(name)
	} else if len(a) == 2 {
		f = fs.ShorthandLookup(a[1:])
	}
	if f == nil { // unknown: as cobra's Find, a flag that takes a value
		return strings.HasPrefix(a, "--") || len(a) == 2
	}
	return f.NoOptDefVal == ""
}

// unknownCommand is kubectl's error for args (as typed after "podhost")
// naming a subcommand that root, or a command that only groups others
// (rollout, top, images, completion), does not have: one error line, the
// suggestions, the pointer to help; exit code 1 (cobra prints such a
// group's help and exits 0). nil for anything else (cobra's own checks).
func unknownCommand(root *cobra.Command, args []string) error {
	if w := positional(root.PersistentFlags(), args); len(w) > 0 && (w[0] == cobra.ShellCompRequestCmd || w[0] == cobra.ShellCompNoDescRequestCmd) {
		return nil // cobra adds these when it runs
	}
	cmd, rest, _ := root.Find(args)
	if cmd == nil || !cmd.HasSubCommands() || cmd.Runnable() {
		return nil
	}
	fs := pflag.NewFlagSet(cmd.Name(), pflag.ContinueOnError)
	fs.AddFlagSet(cmd.LocalFlags())
	fs.AddFlagSet(cmd.InheritedFlags())
	words := positional(fs, rest)
	if len(words) == 0 {
		return nil
	}
	ue := &usageError{err: fmt.Errorf("unknown command %q for %q", words[0], cmd.CommandPath()), command: cmd.CommandPath()}
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2
	}
	if s := cmd.SuggestionsFor(words[0]); len(s) > 0 {
		ue.more = []string{"", "Did you mean this?"}
		for _, name := range s {
			ue.more = append(ue.more, "\t"+name)
		}
		ue.more = append(ue.more, "")
	}
	return ue
}
