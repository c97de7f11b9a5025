package main

import (
	"github.com/spf13/cobra"

	"github.com/podhost/podhost/internal/clients/cli"
)

func newVersionCmd(g *globalOptions) *cobra.Command {
	var opts cli.VersionOptions
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cli.Version(opts, g.streams)
		},
	}
	cmd.Flags().StringVarP(&opts.Output, "output", "o", "", "output format: json")
	return cmd
}
