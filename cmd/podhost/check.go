package main

import (
	"github.com/spf13/cobra"

	"github.com/podhost/podhost/internal/clients/cli"
)

func newCheckCmd(g *globalOptions) *cobra.Command {
	var opts cli.CheckOptions
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Check that this host can run podhost (preflight)",
		Long: "Check containerd, cgroups, CNI plugins and config, the manifest and state\n" +
			"directories and runc. Also compares the containerd, runc and CNI plugin\n" +
			"versions with a short list of known advisories, and warns about files\n" +
			"holding credentials that other users can read and insecure settings (an\n" +
			"http:// manifestURL, allowInsecureManifests, a non-loopback\n" +
			"metricsAddress). Prints one line per check (ok, warn or FAIL) and\n" +
			"exits 1 if any check failed. Honors the daemon's flags.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := g.config(cmd)
			if err != nil {
				return err
			}
			opts.Config = cfg
			return cli.Check(cmd.Context(), opts, g.streams)
		},
	}
	g.flags.BindDaemonFlags(cmd.Flags())
	cmd.Flags().DurationVar(&opts.Timeout, "timeout", 0, "containerd connection timeout (default 3s)")
	return cmd
}
