package main

import (
	"github.com/spf13/cobra"

	"github.com/podhost/podhost/internal/clients/cli"
)

func newRolloutCmd(g *globalOptions) *cobra.Command {
	root := &cobra.Command{Use: "rollout", Short: "Show a pod's versions or bring back its previous one (kubectl rollout)"}
	sub := func(use, short, example string, run func(*cobra.Command, cli.RolloutOptions) error) *cobra.Command {
		var opts cli.RolloutOptions
		cmd := &cobra.Command{Use: use, Short: short, Example: example, Args: cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				cfg, err := g.config(cmd)
				if err != nil {
					return err
				}
				opts.Socket, opts.Name = cfg.Socket, args[0]
				return run(cmd, opts)
			}}
		cmd.Flags().StringVarP(&opts.Namespace, "namespace", "n", "default", "the pod's namespace")
		return cmd
	}
	root.AddCommand(
		sub("history NAME|pod/NAME", "List the last versions of a pod: revision, config hash, age, outcome (* = running)",
			"  podhost rollout history web", func(cmd *cobra.Command, o cli.RolloutOptions) error {
				return cli.RolloutHistory(cmd.Context(), o, g.streams)
			}),
		sub("undo NAME|pod/NAME", "Bring back the version before the running one, until the pod's manifest changes (its containers start anew)",
			"  podhost rollout undo web", func(cmd *cobra.Command, o cli.RolloutOptions) error {
				return cli.RolloutUndo(cmd.Context(), o, g.streams)
			}),
	)
	return root
}
