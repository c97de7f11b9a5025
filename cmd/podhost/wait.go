package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/podhost/podhost/internal/clients/cli"
	"github.com/podhost/podhost/internal/clients/wait"
)

func newWaitCmd(g *globalOptions) *cobra.Command {
	opts := wait.ForOptions{Timeout: 30 * time.Second}
	cmd := &cobra.Command{
		Use:   "wait (pod/NAME... | pods NAME... | pods -l SELECTOR | pods --all) --for=delete|create|condition=NAME[=VALUE]|jsonpath='{EXPR}'[=VALUE]",
		Short: "Wait for a condition on pods (kubectl wait)",
		Long: "Wait until the condition holds for every pod named or selected, as kubectl wait: one line\n" +
			"\"pod/NAME condition met\" per pod, in turn; exit code 1 on timeout (\"timed out waiting for\n" +
			"the condition on pods/NAME\"). Pods are selected when the wait starts; a missing name is\n" +
			"NotFound, except with --for=delete (nothing to wait for) and --for=create (what it waits\n" +
			"for). A daemon that is not up yet, or restarts, is waited for until the timeout.",
		Example: "  podhost wait --for=condition=Ready pod/web\n  podhost wait --for=condition=Ready pods -l app=web --timeout=2m\n" +
			"  podhost wait --for=jsonpath='{.status.phase}'=Succeeded pod/batch\n" +
			"  podhost wait --for=jsonpath='{.status.conditions[?(@.type==\"Ready\")].status}'=True pod/web\n" +
			"  podhost delete web && podhost wait --for=delete pod/web --timeout=60s\n" +
			"  podhost apply -f web.yaml && podhost wait --for=create pod/web",
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := g.config(cmd)
			if err != nil {
				return err
			}
			resource, names, err := cli.ResourceArgs("wait", args)
			if err != nil {
				return err
			}
			if resource != "pods" {
				return fmt.Errorf("podhost waits for pods, not %s", resource)
			}
			opts.Socket, opts.Names = cfg.Socket, names
			return wait.For(cmd.Context(), opts, g.streams)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.For, "for", "", "the condition: delete, create, condition=NAME[=VALUE] (VALUE default true, case-insensitive) or jsonpath='{EXPR}'[=VALUE] (without VALUE: the field exists)")
	f.DurationVar(&opts.Timeout, "timeout", opts.Timeout, "how long to wait; 0 checks once, negative waits a week")
	f.StringVarP(&opts.Namespace, "namespace", "n", "default", "the pods' namespace")
	f.BoolVarP(&opts.AllNamespaces, "all-namespaces", "A", false, "select pods of every namespace (with -l or --all; -n is then ignored, as kubectl)")
	f.StringVarP(&opts.Selector, "selector", "l", "", "label selector, as kubectl's (e.g. -l app=web)")
	f.BoolVar(&opts.All, "all", false, "every pod of the namespace")
	return cmd
}
