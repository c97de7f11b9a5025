package main

import (
	"github.com/spf13/cobra"

	"github.com/podhost/podhost/internal/clients/cli"
	"github.com/podhost/podhost/internal/config"
)

func newKubeconfigCmd(g *globalOptions) *cobra.Command {
	var opts cli.KubeconfigOptions
	cmd := &cobra.Command{
		Use:   "kubeconfig",
		Short: "Print an admin kubeconfig for this node's Kubernetes API",
		Long: "Print a kubeconfig with the node's CA and the admin client certificate embedded,\n" +
			"for kubectl and any client-go program:\n\n" +
			"  podhost kubeconfig > ~/.kube/config && kubectl get pods\n\n" +
			"The server is https://<kubeAPIAddress> (loopback by default); from another\n" +
			"machine, pass the address it reaches this one by with --server.\n" +
			"The kubeconfig grants everything on the node: keep it as you keep root's password.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := g.config(cmd)
			if err != nil {
				return err
			}
			opts.StateDir, opts.Address = cfg.StateDir, cfg.KubeAPIAddress
			return cli.Kubeconfig(opts, g.streams)
		},
	}
	cmd.Flags().StringVar(&opts.Server, "server", "", "the API server URL the kubeconfig names (default https://<kubeAPIAddress>)")
	cmd.Flags().StringVar(&g.flags.StateDir, config.FlagStateDir, g.flags.StateDir, "the daemon's state directory (its PKI is <state-dir>/pki)")
	cmd.Flags().StringVar(&g.flags.KubeAPIAddress, config.FlagKubeAPIAddress, g.flags.KubeAPIAddress, "the daemon's kubeAPIAddress")
	return cmd
}
