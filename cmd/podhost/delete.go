package main

import (
	"github.com/podhost/podhost/internal/clients/manifestcmd"
	"github.com/spf13/cobra"
)

func newDeleteCmd(g *globalOptions) *cobra.Command {
	var opts manifestcmd.DeleteOptions
	cmd := &cobra.Command{
		Use:   "delete NAME... | -f FILE|DIR|-",
		Short: "Remove pods from the manifest directory",
		Long: "Remove each pod's document from the manifest directory, whatever file\n" +
			"holds it (a multi-document file is rewritten without it). Works with the\n" +
			"daemon down; the daemon stops the pod. As kubectl delete, it then waits until the pods are\n" +
			"gone (--wait=false: returns at once).",
		Example: "  podhost delete web\n  podhost delete web -n infra\n  podhost delete -f web.yaml",
		ValidArgsFunction: func(cmd *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
			cfg, err := g.config(cmd)
			if err != nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			return manifestcmd.PodNames(cfg.ManifestDir, cfg.AllowInsecureManifests, opts.Namespace), cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := g.config(cmd)
			if err != nil {
				return err
			}
			opts.Names = args
			opts.ManifestDir = cfg.ManifestDir
			opts.AllowInsecure = cfg.AllowInsecureManifests
			opts.Socket = cfg.Socket
			return manifestcmd.Delete(cmd.Context(), opts, g.streams)
		},
	}
	fs := cmd.Flags()
	fs.StringVarP(&opts.Namespace, "namespace", "n", "default", "pod namespace")
	fs.StringArrayVarP(&opts.Files, "filename", "f", nil, "delete the pods declared in a file, directory or - (repeatable)")
	fs.BoolVar(&opts.IgnoreNotFound, "ignore-not-found", false, "treat a missing pod as deleted")
	fs.BoolVar(&opts.Wait, "wait", true, "wait until the pods are gone (containers stopped, resources released), as kubectl; not when the daemon is down")
	fs.DurationVar(&opts.Timeout, "timeout", 0, "with --wait, how long to wait at most (0: until gone)")
	return cmd
}
