package main

import (
	"fmt"

	"github.com/podhost/podhost/internal/clients/cmdutil"
	"github.com/podhost/podhost/internal/clients/manifestcmd"
	"github.com/podhost/podhost/internal/clients/wait"
	"github.com/podhost/podhost/internal/desired/podsecurity"
	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/types"
)

func newApplyCmd(g *globalOptions) *cobra.Command {
	var opts manifestcmd.ApplyOptions
	var dry string
	cmd := &cobra.Command{
		Use:   "apply -f FILE|DIR|-",
		Short: "Validate manifests and write them into the manifest directory",
		Long: "Validate every input first (nothing is written if any is invalid), then\n" +
			"write each pod atomically into the manifest directory: into the file that\n" +
			"already declares it, else a new <name>.yaml (or <namespace>_<name>.yaml;\n" +
			".json for JSON input). Works with the daemon down.",
		Example: "  podhost apply -f web.yaml\n  podhost apply -f ./pods/ --dry-run=client\n  podhost apply -f web.yaml -n infra\n  cat web.yaml | podhost apply -f -",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := g.config(cmd)
			if err != nil {
				return err
			}
			if opts.DryRun, err = dryRun(dry, g); err != nil {
				return err
			}
			if !cmd.Flags().Changed("namespace") {
				opts.Namespace = ""
			}
			opts.ManifestDir = cfg.ManifestDir
			opts.AllowInsecure = cfg.AllowInsecureManifests
			dir := cfg.PodSecurity.ManifestDir
			if opts.PodSecurity, err = podsecurity.New("manifestDir", dir.Level, dir.AllowedHostPaths); err != nil {
				return err
			}
			results, err := manifestcmd.Apply(cmd.Context(), opts, g.streams)
			if err != nil || opts.WaitTimeout <= 0 || opts.DryRun != cmdutil.DryRunNone {
				return err
			}
			w := wait.ReadyOptions{Socket: cfg.Socket, Timeout: opts.WaitTimeout, UIDs: map[types.UID]string{}}
			for _, r := range results {
				if r.Pod != nil { // nil for a ConfigMap or Secret: nothing to wait for
					w.UIDs[r.Pod.UID] = r.Pod.Name
				}
				for _, p := range r.Pods { // a workload's, once rolled out
					w.UIDs[p.UID] = p.Name
				}
			}
			if len(w.UIDs) == 0 {
				return nil
			}
			return wait.Ready(cmd.Context(), w, g.streams)
		},
	}
	fs := cmd.Flags()
	fs.StringArrayVarP(&opts.Files, "filename", "f", nil, "manifest file, directory (its *.yaml, *.yml, *.json) or - for stdin (repeatable)")
	cmdutil.AddDryRunFlag(fs, &dry)
	fs.StringVarP(&opts.Namespace, "namespace", "n", "default", "apply documents that name no namespace in this one (written into them); one naming another is an error")
	fs.DurationVar(&opts.WaitTimeout, "wait", 0, "wait until the pods are running and ready (--wait alone: "+manifestcmd.DefaultWaitTimeout.String()+")")
	fs.Lookup("wait").NoOptDefVal = manifestcmd.DefaultWaitTimeout.String()
	_ = cmd.MarkFlagRequired("filename")
	return cmd
}

// dryRun parses --dry-run as kubectl, printing its deprecation warnings.
func dryRun(v string, g *globalOptions) (cmdutil.DryRun, error) {
	d, warn, err := cmdutil.ParseDryRun(v)
	if warn != "" {
		fmt.Fprintln(g.streams.ErrOut, "Warning: "+warn)
	}
	return d, err
}
