package main

import (
	"github.com/spf13/cobra"

	"github.com/podhost/podhost/internal/cli"
)

func newImagesCmd(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "images",
		Short: "Manage images in podhost's containerd namespace",
	}
	var opts cli.ImagesOptions
	bind := func(c *cobra.Command) {
		g.flags.BindContainerdFlags(c.Flags())
	}
	imp := &cobra.Command{
		Use:   "import FILE.tar",
		Short: "Import an OCI layout or docker save archive (- for stdin)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := g.config(cmd)
			if err != nil {
				return err
			}
			opts.Address, opts.Namespace, opts.File = cfg.ContainerdAddress, cfg.Namespace, args[0]
			return cli.ImagesImport(cmd.Context(), opts, g.streams)
		},
	}
	ls := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List images",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := g.config(cmd)
			if err != nil {
				return err
			}
			opts.Address, opts.Namespace = cfg.ContainerdAddress, cfg.Namespace
			return cli.ImagesList(cmd.Context(), opts, g.streams)
		},
	}
	bind(imp)
	bind(ls)
	cmd.AddCommand(imp, ls)
	return cmd
}
