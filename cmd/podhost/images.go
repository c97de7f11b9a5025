package main

import (
	"github.com/spf13/cobra"

	"github.com/podhost/podhost/internal/clients/cli"
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
	cmds := append([]*cobra.Command{imp, ls}, newImagesGCCmds(g, &opts)...)
	for _, c := range cmds {
		bind(c)
	}
	cmd.AddCommand(cmds...)
	return cmd
}

// newImagesGCCmds are images pull, rm and prune.
func newImagesGCCmds(g *globalOptions, opts *cli.ImagesOptions) []*cobra.Command {
	withConfig := func(cmd *cobra.Command) error {
		cfg, err := g.config(cmd)
		if err != nil {
			return err
		}
		opts.Address, opts.Namespace = cfg.ContainerdAddress, cfg.Namespace
		opts.ManifestDir, opts.AllowInsecure = cfg.ManifestDir, cfg.AllowInsecureManifests
		return nil
	}
	pull := &cobra.Command{
		Use:   "pull REF",
		Short: "Pull an image and unpack it, showing the bytes of each layer",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := withConfig(cmd); err != nil {
				return err
			}
			return cli.ImagesPull(cmd.Context(), *opts, args[0], g.streams)
		},
	}
	rm := &cobra.Command{
		Use:     "rm REF...",
		Aliases: []string{"remove"},
		Short:   "Remove images (their layers go once nothing else uses them)",
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := withConfig(cmd); err != nil {
				return err
			}
			return cli.ImagesRemove(cmd.Context(), *opts, args, g.streams)
		},
	}
	prune := &cobra.Command{
		Use:   "prune",
		Short: "Remove every image no manifest references and no container uses",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := withConfig(cmd); err != nil {
				return err
			}
			return cli.ImagesPrune(cmd.Context(), *opts, g.streams)
		},
	}
	return []*cobra.Command{pull, rm, prune}
}
