package main

import (
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/podhost/podhost/internal/clients/cli"
	"github.com/podhost/podhost/internal/clients/manifestcmd"
)

// completion says which arguments of a command are pod names.
type completion int

const (
	podArgs     completion = iota // every argument (delete)
	podFirstArg                   // only the first (logs, exec)
	typedArgs                     // TYPE, then its names (get, describe)
)

// completeNames is the ValidArgsFunction of the commands that take pod
// names: the pods of the namespace (-n) the manifest dir declares, as
// kubectl completes them from the API server; names already given are not
// offered again. get and describe complete the resource type first.
func completeNames(g *globalOptions, namespace *string, mode completion) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
		switch {
		case mode == podFirstArg && len(args) > 0:
			return nil, cobra.ShellCompDirectiveNoFileComp
		case mode == typedArgs && len(args) == 0:
			return []string{"pods", "nodes", "configmaps", "secrets"}, cobra.ShellCompDirectiveNoFileComp
		case mode == typedArgs:
			if r, _, err := cli.ResourceArgs(cmd.Name(), args[:1]); err != nil || r != "pods" {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
		}
		cfg, err := g.config(cmd)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		names := manifestcmd.PodNames(cfg.ManifestDir, cfg.AllowInsecureManifests, *namespace)
		names = slices.DeleteFunc(names, func(n string) bool {
			return slices.ContainsFunc(args, func(a string) bool { return a == n || strings.TrimPrefix(a, "pod/") == n })
		})
		return names, cobra.ShellCompDirectiveNoFileComp
	}
}
