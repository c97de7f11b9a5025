package main

import (
	"github.com/spf13/cobra"

	"github.com/podhost/podhost/internal/clients/cli"
)

func newEventsCmd(g *globalOptions) *cobra.Command {
	var opts cli.EventsOptions
	cmd := &cobra.Command{
		Use:     "events",
		Short:   "List pod events (kubectl events)",
		Example: "  podhost events\n  podhost events -A -w\n  podhost events --for pod/web",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := g.config(cmd)
			if err != nil {
				return err
			}
			opts.Socket = cfg.Socket
			return cli.Events(cmd.Context(), opts, g.streams)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&opts.Namespace, "namespace", "n", "default", "events of the pods of this namespace")
	f.BoolVarP(&opts.AllNamespaces, "all-namespaces", "A", false, "events of every namespace")
	f.StringVar(&opts.For, "for", "", "only the events of this object: pod/NAME")
	f.BoolVarP(&opts.Watch, "watch", "w", false, "after the list, print new events as they happen")
	return cmd
}

func newTopCmd(g *globalOptions) *cobra.Command {
	var opts cli.TopOptions
	top := &cobra.Command{Use: "top", Short: "Show pods' CPU and memory usage (kubectl top)"}
	pods := &cobra.Command{
		Use:     "pod [NAME]",
		Aliases: []string{"pods", "po"},
		Short:   "CPU (millicores over a short window) and memory (working set) of pods",
		Example: "  podhost top pods\n  podhost top pods -A\n  podhost top pod web --containers",
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := g.config(cmd)
			if err != nil {
				return err
			}
			opts.Socket = cfg.Socket
			if len(args) == 1 {
				opts.Name = args[0]
			}
			return cli.Top(cmd.Context(), opts, g.streams)
		},
	}
	f := pods.Flags()
	f.StringVarP(&opts.Namespace, "namespace", "n", "default", "the pods' namespace")
	f.BoolVarP(&opts.AllNamespaces, "all-namespaces", "A", false, "pods of every namespace")
	f.BoolVar(&opts.Containers, "containers", false, "one line per container")
	top.AddCommand(pods)
	return top
}
