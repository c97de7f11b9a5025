package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/podhost/podhost/internal/config"
	"github.com/podhost/podhost/internal/kubelet/admission"
	"github.com/podhost/podhost/internal/services/cluster/join"
)

// JoinCommand is the subcommand `podhost join` runs: `podhost-cluster join`.
const JoinCommand = "join"

// joinOptions are `podhost-cluster join`'s flags.
type joinOptions struct {
	join.Options
	configPath, stateDir string
	start                bool
}

func parseJoinFlags(args []string, stdout io.Writer) (joinOptions, error) {
	o := joinOptions{start: true}
	fs := pflag.NewFlagSet("podhost-cluster join", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	fs.StringVar(&o.Server, "server", "", "the API server, https://HOST:PORT (with --token)")
	fs.StringVar(&o.Token, "token", "", "a bootstrap token (TLS bootstrap: the node asks the cluster for its client certificate)")
	fs.StringArrayVar(&o.CACertHashes, "ca-cert-hash", nil, "sha256:<hex> of the API server's CA public key, as kubeadm join's --discovery-token-ca-cert-hash (repeatable)")
	fs.StringVar(&o.CACertFile, "ca-cert", "", "the API server's CA certificate file (instead of, or with, --ca-cert-hash)")
	fs.StringVar(&o.Kubeconfig, "kubeconfig", "", "a kubeconfig with the node's credentials made elsewhere (instead of --server/--token)")
	fs.StringVar(&o.NodeName, "node-name", "", "the node's name (default: the config's cluster.nodeName, else the host name, lower-cased)")
	fs.DurationVar(&o.Timeout, "timeout", 5*time.Minute, "how long to wait for the certificate signing request to be approved and signed")
	fs.BoolVar(&o.start, "start", true, "enable and (re)start podhost-cluster.service if systemd runs")
	fs.StringVar(&o.configPath, config.FlagConfig, "", "podhost's config file, which gets the cluster: section (default "+config.DefaultPath+")")
	fs.StringVar(&o.stateDir, config.FlagStateDir, "", "the daemon's state directory, if it was given one by flag: the client certificate goes to <state-dir>/cluster/pki (default: the config's stateDir)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			fmt.Fprintf(stdout, "Usage: podhost-cluster join --server URL --token TOKEN --ca-cert-hash sha256:HEX | --kubeconfig FILE\n%s", fs.FlagUsages())
		}
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	return o, o.Validate()
}

// runJoin is `podhost-cluster join`: the node's credentials, the config's
// cluster: section, the agent started. 1 with one line, and nothing
// written, when anything is wrong.
func runJoin(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parseJoinFlags(args, stdout)
	if errors.Is(err, pflag.ErrHelp) {
		return 0
	}
	if err == nil {
		err = doJoin(ctx, o, stdout)
	}
	if err != nil {
		fmt.Fprintln(stderr, "podhost-cluster join:", strings.ReplaceAll(err.Error(), "\n", "; "))
		return 1
	}
	return 0
}

func doJoin(ctx context.Context, o joinOptions, stdout io.Writer) error {
	cfg, err := loadOrDefault(o.configPath)
	if err != nil {
		return err
	}
	if o.stateDir != "" {
		cfg.StateDir = o.stateDir
	}
	if o.NodeName == "" {
		o.NodeName = cfg.Cluster.NodeName
	}
	if o.NodeName == "" {
		host, _ := os.Hostname()
		o.NodeName = admission.NodeName(host)
	}
	if msgs := validation.IsDNS1123Subdomain(o.NodeName); len(msgs) > 0 {
		return fmt.Errorf("--node-name %q: %s", o.NodeName, strings.Join(msgs, "; "))
	}
	configPath := o.configPath
	if configPath == "" {
		configPath = config.DefaultPath
	}
	o.Dir = filepath.Dir(configPath)
	o.PKIDir = cfg.ClusterPKIDir()
	o.UserAgent = userAgent()
	// The config is checked before anything is asked or written.
	edit, err := config.EditCluster(configPath, config.Cluster{Kubeconfig: filepath.Join(o.Dir, join.KubeconfigName), NodeName: o.NodeName})
	if err != nil {
		return err
	}
	kubeconfig, err := join.Join(ctx, o.Options)
	if err != nil {
		return err
	}
	if err := edit.Write(); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "node %s joined: credentials in %s, cluster: section in %s\n", o.NodeName, kubeconfig, edit.Path())
	return startAgent(ctx, o, stdout)
}

// startAgent enables and restarts podhost-cluster.service where systemd
// runs; elsewhere it says what to run.
func startAgent(ctx context.Context, o joinOptions, stdout io.Writer) error {
	run := "podhost-cluster"
	if o.configPath != "" {
		run += " --config " + o.configPath
	}
	if o.stateDir != "" {
		run += " --state-dir " + o.stateDir
	}
	if _, err := os.Stat("/run/systemd/system"); err != nil || !o.start {
		fmt.Fprintf(stdout, "start the agent: %s (podhost reads cluster.nodeName at start: restart podhost if it runs under another node name)\n", run)
		return nil
	}
	for _, args := range [][]string{{"enable", "podhost-cluster.service"}, {"restart", "podhost-cluster.service"}} {
		if out, err := exec.CommandContext(ctx, "systemctl", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("joined, but systemctl %s: %w: %s (start the agent: %s)", strings.Join(args, " "), err, strings.TrimSpace(string(out)), run)
		}
	}
	fmt.Fprintln(stdout, "podhost-cluster.service enabled and started (podhost reads cluster.nodeName at start: restart podhost if it runs under another node name)")
	return nil
}

// loadOrDefault is config.Load, the defaults for a file that is not there
// yet (join writes it).
func loadOrDefault(path string) (*config.Config, error) {
	if path != "" {
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			return config.Default(), nil
		}
	}
	return config.Load(path)
}
