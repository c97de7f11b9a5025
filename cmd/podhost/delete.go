package main

import (
	"github.com/podhost/podhost/internal/clients/cmdutil"
	"github.com/podhost/podhost/internal/clients/manifestcmd"
	"github.com/spf13/cobra"
)

func newDeleteCmd(g *globalOptions) *cobra.Command {
	var opts manifestcmd.DeleteOptions
	var dry string
	var grace int
	cmd := &cobra.Command{
		Use:   "delete NAME... | -f FILE|DIR|- | [pods|configmaps|secrets] (-l SELECTOR | --all)",
		Short: "Remove pods from the manifest directory",
		Long: "Remove each pod's document from the manifest directory, whatever file\n" +
			"holds it (a multi-document file is rewritten without it). Works with the\n" +
			"daemon down; the daemon stops the pod. As kubectl delete, it then waits until the pods are\n" +
			"gone (--wait=false: returns at once).",
		Example: "  podhost delete web\n  podhost delete web -n infra\n  podhost delete -f web.yaml\n  podhost delete pods -l app=web\n" +
			"  podhost delete pods --all -n infra\n  podhost delete web --grace-period=5\n  podhost delete web --now\n  podhost delete web --force\n  podhost delete web --dry-run=client",
		ValidArgsFunction: completeNames(g, &opts.Namespace, podArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := g.config(cmd)
			if err != nil {
				return err
			}
			if opts.DryRun, err = dryRun(dry, g); err != nil {
				return err
			}
			opts.Names = args
			opts.NamespaceSet = cmd.Flags().Changed("namespace")
			if cmd.Flags().Changed("grace-period") {
				opts.GracePeriod = &grace
			}
			opts.ManifestDir = cfg.ManifestDir
			opts.AllowInsecure = cfg.AllowInsecureManifests
			opts.Socket = cfg.Socket
			return manifestcmd.Delete(cmd.Context(), opts, g.streams)
		},
	}
	fs := cmd.Flags()
	fs.StringVarP(&opts.Namespace, "namespace", "n", "default", "pod namespace")
	fs.StringArrayVarP(&opts.Files, "filename", "f", nil, "delete the pods declared in a file, directory or - (repeatable)")
	fs.BoolVar(&opts.IgnoreNotFound, "ignore-not-found", false, "treat a missing pod as deleted (default with -l and --all)")
	fs.BoolVar(&opts.Wait, "wait", true, "wait until the pods are gone (containers stopped, resources released), as kubectl; not when the daemon is down")
	fs.DurationVar(&opts.Timeout, "timeout", 0, "with --wait, how long to wait at most (0: until gone)")
	fs.StringVarP(&opts.Selector, "selector", "l", "", "delete the pods (or the type given) of the namespace this label selector matches, e.g. -l app=web")
	fs.BoolVar(&opts.All, "all", false, "delete every pod (or object of the type given) of the namespace")
	fs.IntVar(&grace, "grace-period", -1, "seconds the pods get to terminate gracefully (at most their own); -1: their own; 1: immediate shutdown; 0 only with --force")
	fs.BoolVar(&opts.Now, "now", false, "signal the pods for immediate shutdown (same as --grace-period=1)")
	fs.BoolVar(&opts.Force, "force", false, "do not wait for the pods to stop (kubectl: remove from the API at once); with no --grace-period, the shortest grace period")
	cmdutil.AddDryRunFlag(fs, &dry)
	return cmd
}
