package main

import (
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/podhost/podhost/internal/daemon"
)

func newDaemonCmd(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "daemon",
		Short: "Run the pod manager (systemd starts this at boot)",
		Long: "Run podhost: watch the manifest directory, run its pods through containerd,\n" +
			"and serve the API socket. SIGTERM stops podhost, never the pods: the next\n" +
			"start adopts the running containers.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := g.config(cmd)
			if err != nil {
				return err
			}
			return daemon.Run(cmd.Context(), cfg, newLogger())
		},
	}
	g.flags.BindDaemonFlags(cmd.Flags())
	return cmd
}

// newLogger logs text to stderr (journald adds timestamps under systemd);
// PODHOST_LOG_LEVEL=debug|info|warn|error sets the level.
func newLogger() *slog.Logger {
	level := slog.LevelInfo
	_ = level.UnmarshalText([]byte(strings.ToUpper(os.Getenv("PODHOST_LOG_LEVEL"))))
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}
