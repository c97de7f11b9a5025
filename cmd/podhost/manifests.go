package main

import (
	"os"

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
			"podhost whose manifestURL is the artifact will. With --key it signs the digest as\n" +
			"`cosign sign --key` does (the key's password in COSIGN_PASSWORD) and pushes the signature\n" +
			"as a referrer; else sign the digest it prints with `cosign sign --key cosign.key\n" +
			"REGISTRY/REPOSITORY@DIGEST`, for an imagePolicy that covers the repository.",
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := g.config(cmd)
			if err != nil {
				return err
			}
			o.Dir, o.Ref = args[0], args[1]
			if o.Key != "" {
				o.Password = []byte(os.Getenv("COSIGN_PASSWORD"))
			}
			o.Registry = runtime.Registry{HostsDir: cfg.RegistryHostsDir, AuthFiles: cfg.AuthFiles}
			return manifestcmd.Push(cmd.Context(), o, g.streams)
		},
	}
	push.Flags().StringVar(&o.Source, "source", "", "the source the manifests come from (annotation org.opencontainers.image.source)")
	push.Flags().StringVar(&o.Key, "key", "", "sign the artifact with this private key (cosign generate-key-pair's; password in COSIGN_PASSWORD)")
	push.Flags().StringVar(&o.Revision, "revision", "", "their revision (annotation org.opencontainers.image.revision)")
	cmd.AddCommand(push)
	return cmd
}
