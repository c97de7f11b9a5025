package main

import (
	"github.com/spf13/cobra"

	"github.com/podhost/podhost/internal/clients/manifestcmd"
	"github.com/podhost/podhost/internal/host/runtime"
)

func newManifestsCmd(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "manifests",
		Short: "Publish manifests as an OCI artifact (the oci:// manifestURL)",
	}
	var o manifestcmd.PushOptions
	push := &cobra.Command{
		Use:   "push DIR oci://REGISTRY/REPOSITORY:TAG",
		Short: "Push the manifests of DIR as a Flux-format OCI artifact, after checking them",
		Long: "Push the manifests of DIR as an OCI artifact in Flux's format (as `flux push artifact` does),\n" +
			"through the registryHostsDir and authFiles of the config, after checking every file as a\n" +
			"podhost whose manifestURL is the artifact will. Sign the digest it prints with\n" +
			"`cosign sign --key cosign.key REGISTRY/REPOSITORY@DIGEST` for an imagePolicy that covers it.",
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := g.config(cmd)
			if err != nil {
				return err
			}
			o.Dir, o.Ref = args[0], args[1]
			o.Registry = runtime.Registry{HostsDir: cfg.RegistryHostsDir, AuthFiles: cfg.AuthFiles}
			return manifestcmd.Push(cmd.Context(), o, g.streams)
		},
	}
	push.Flags().StringVar(&o.Source, "source", "", "the source the manifests come from (annotation org.opencontainers.image.source)")
	push.Flags().StringVar(&o.Revision, "revision", "", "their revision (annotation org.opencontainers.image.revision)")
	cmd.AddCommand(push)
	return cmd
}
