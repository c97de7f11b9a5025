package main

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/podhost/podhost/internal/clients/cp"
)

func newCpCmd(g *globalOptions) *cobra.Command {
	var opts cp.Options
	cmd := &cobra.Command{
		Use:   "cp [NAMESPACE/]POD:PATH LOCAL | LOCAL [NAMESPACE/]POD:PATH",
		Short: "Copy files and directories to and from containers",
		Long: "Copy files and directories to and from a running container, like kubectl cp: podhost\n" +
			"execs tar in the container (the image must have a tar binary) and streams a tar archive\n" +
			"through the exec. Into a directory that exists in the container, SRC goes under its own\n" +
			"name; otherwise it becomes DEST. Out of the container, SRC becomes the local DEST (a\n" +
			"directory's contents go into DEST). Entries that would land outside DEST, and symlinks\n" +
			"that could point outside it, are skipped with a warning.",
		Example: "  podhost cp ./app.conf web:/etc/app.conf\n  podhost cp ./site web:/usr/share/site -c nginx\n" +
			"  podhost cp infra/db:/var/log/db.log ./db.log\n  podhost cp web:/etc/nginx ./nginx",
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) != 2 {
				return &usageError{err: errors.New("source and destination are required"), command: cmd.CommandPath()}
			}
			cfg, err := g.config(cmd)
			if err != nil {
				return err
			}
			opts.Socket, opts.Src, opts.Dest = cfg.Socket, args[0], args[1]
			if err := opts.CheckArgs(); err != nil {
				return &usageError{err: err, command: cmd.CommandPath()}
			}
			return commandResult(cp.Copy(cmd.Context(), opts, g.streams))
		},
	}
	f := cmd.Flags()
	f.StringVarP(&opts.Namespace, "namespace", "n", "default", "the pod's namespace (NAMESPACE/POD: overrides it)")
	f.StringVarP(&opts.Container, "container", "c", "", "container name (default: the kubectl.kubernetes.io/default-container annotation's, else the first)")
	f.BoolVar(&opts.NoPreserve, "no-preserve", false, "into the container: keep neither the files' owner nor their permissions")
	return cmd
}
