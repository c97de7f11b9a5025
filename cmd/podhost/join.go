package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/podhost/podhost/internal/config"
)

// clusterAgent is the binary that does `podhost join`: podhost does not
// link client-go's clientset (docs/decisions.md 29).
const clusterAgent = "podhost-cluster"

func newJoinCmd(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "join (--server URL --token TOKEN --ca-cert-hash sha256:HEX | --kubeconfig FILE)",
		Short: "Join this machine to a Kubernetes cluster as a node",
		Long: "join gives this machine a node's credentials for a Kubernetes cluster, as kubeadm join\n" +
			"gives them to a kubelet: with a bootstrap token it checks the API server's CA (--ca-cert-hash,\n" +
			"or --ca-cert), asks the cluster for a client certificate (a CertificateSigningRequest the\n" +
			"cluster approves and signs) and writes the node's kubeconfig; with --kubeconfig it checks and\n" +
			"copies credentials made elsewhere. It then writes the cluster: section of the config file and\n" +
			"starts podhost-cluster.service where systemd runs. podhost-cluster (beside podhost, or on\n" +
			"PATH) does the work. Nothing is written unless the credentials were got. See docs/cluster.md.",
		Example: "  podhost join --server https://10.0.0.1:6443 --token abcdef.0123456789abcdef \\\n" +
			"    --ca-cert-hash sha256:0123...cdef\n  podhost join --kubeconfig ./box-17.kubeconfig",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runJoin(cmd, g)
		},
	}
	f := cmd.Flags()
	f.String("server", "", "the API server, https://HOST:PORT (with --token)")
	f.String("token", "", "a bootstrap token (the node asks the cluster for its client certificate)")
	f.StringArray("ca-cert-hash", nil, "sha256:<hex> of the API server's CA public key, as kubeadm's (repeatable)")
	f.String("ca-cert", "", "the API server's CA certificate file (instead of, or with, --ca-cert-hash)")
	f.String("kubeconfig", "", "a kubeconfig with the node's credentials made elsewhere (instead of --server/--token)")
	f.String("node-name", "", "the node's name (default: the config's cluster.nodeName, else the host name, lower-cased)")
	f.Duration("timeout", 5*time.Minute, "how long to wait for the certificate signing request to be approved and signed")
	f.Bool("start", true, "enable and (re)start podhost-cluster.service if systemd runs")
	f.String(config.FlagStateDir, "", "the daemon's state directory, if it was given one by flag (the client certificate goes to <state-dir>/cluster/pki)")
	return cmd
}

// runJoin runs podhost-cluster join with the flags given; its exit code
// is podhost's, its one error line the only one.
func runJoin(cmd *cobra.Command, g *globalOptions) error {
	bin, err := findClusterAgent()
	if err != nil {
		return err
	}
	args := []string{"join"}
	if g.configPath != "" {
		args = append(args, "--"+config.FlagConfig+"="+g.configPath)
	}
	// Its own flags the user set, not the global ones (podhost-cluster
	// join has --config only).
	cmd.LocalNonPersistentFlags().VisitAll(func(f *pflag.Flag) {
		if !f.Changed {
			return
		}
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			for _, v := range sv.GetSlice() {
				args = append(args, "--"+f.Name+"="+v)
			}
			return
		}
		args = append(args, "--"+f.Name+"="+f.Value.String())
	})
	c := exec.CommandContext(cmd.Context(), bin, args...)
	c.Stdin, c.Stdout, c.Stderr = g.streams.In, g.streams.Out, g.streams.ErrOut
	if err := c.Run(); err != nil {
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) && ee.ExitCode() > 0 {
			return &silentExitError{code: ee.ExitCode()}
		}
		return fmt.Errorf("join: %s: %w", bin, err)
	}
	return nil
}

// findClusterAgent is podhost-cluster beside this executable, else on PATH.
func findClusterAgent() (string, error) {
	if self, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(self), clusterAgent)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	p, err := exec.LookPath(clusterAgent)
	if err != nil {
		return "", fmt.Errorf("join: %s is not installed beside podhost nor on PATH (make install / scripts/install.sh install it)", clusterAgent)
	}
	return p, nil
}

// silentExitError ends podhost with code; the child already said why.
type silentExitError struct{ code int }

func (e *silentExitError) Error() string { return fmt.Sprintf("exit code %d", e.code) }
