// Command podhost-cluster makes the podhost daemon of this machine a node
// of a Kubernetes cluster (docs/cluster.md): it registers the Node, keeps
// its status and Lease current and publishes a mirror pod for every pod,
// reading the node from the daemon's Kubernetes API on its unix socket and
// writing to the cluster's API server with the node's kubeconfig
// (cluster.kubeconfig in podhost's config file). `podhost-cluster join`
// (run by `podhost join`) gets those credentials and writes that config.
//
// It runs beside the daemon (manifests/systemd/podhost-cluster.service),
// never inside it: the daemon does not link client-go's clientset, costs
// nothing more standalone, and keeps every pod running whether this
// process or the API server is up or not (docs/decisions.md 29).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/podhost/podhost/internal/clients/localnode"
	"github.com/podhost/podhost/internal/config"
	"github.com/podhost/podhost/internal/services/cluster"
	"github.com/podhost/podhost/internal/services/cluster/join"
	"github.com/podhost/podhost/internal/version"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	var code int
	if len(os.Args) > 1 && os.Args[1] == JoinCommand {
		code = runJoin(ctx, os.Args[2:], os.Stdout, os.Stderr)
	} else {
		code = run(ctx, os.Args[1:], os.Stderr)
	}
	stop()
	os.Exit(code)
}

// options are the command line's.
type options struct {
	configPath, socket, kubeconfig, stateDir string
	version                                  bool
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := pflag.NewFlagSet("podhost-cluster", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.configPath, config.FlagConfig, "", "podhost's config file (default "+config.DefaultPath+")")
	fs.StringVar(&o.socket, config.FlagSocket, "", "the daemon's API socket (default: the config's socket)")
	fs.StringVar(&o.stateDir, config.FlagStateDir, "", "the daemon's state directory, if it was given one by flag: the cluster's pods go to <state-dir>/cluster/manifests (default: the config's stateDir)")
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "the node's kubeconfig for the cluster (default: the config's cluster.kubeconfig)")
	fs.BoolVar(&o.version, "version", false, "print the version and exit")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	return o, nil
}

// run returns the exit code: 1 with one line for a bad command line or
// config, 0 when ctx ends.
func run(ctx context.Context, args []string, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if errors.Is(err, pflag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "podhost-cluster:", err)
		return 1
	}
	if o.version {
		fmt.Fprintln(stderr, "podhost-cluster", version.Version)
		return 0
	}
	central, certFile, cfg, err := setUp(o)
	if err != nil {
		fmt.Fprintln(stderr, "podhost-cluster:", err)
		return 1
	}
	kapi, err := prepareKubeletAPI(cfg, central)
	if err != nil {
		fmt.Fprintln(stderr, "podhost-cluster:", err)
		return 1
	}
	socket := cfg.Socket
	log := newLogger(stderr)
	klog.SetSlogLogger(log.With("component", "client-go"))
	local, err := kubernetes.NewForConfig(localnode.RESTConfig(socket, userAgent()))
	if err != nil {
		fmt.Fprintln(stderr, "podhost-cluster:", err)
		return 1
	}
	name, ok := waitForDaemon(ctx, local, socket, log)
	if !ok {
		return 0
	}
	if pki := cfg.ClusterPKIDir(); certFile == join.CurrentClientCert(pki) {
		if err := join.RotateClientCert(ctx, central, name, pki); err != nil {
			log.Error("cannot rotate the client certificate", "err", err)
		}
	}
	node := localnode.New(local, socket, name)
	go func() {
		if err := node.Run(ctx); err != nil {
			log.Error("cannot watch the daemon's pods", "err", err)
		}
	}()
	// the kubelet API starts first (the Node publishes its port) and asks
	// the agent, once there, which pods the cluster binds here
	var agent atomic.Pointer[cluster.Agent]
	port := kapi.start(ctx, node, socket, func(ns, name string) (*corev1.Pod, bool) {
		if a := agent.Load(); a != nil {
			return a.ClusterPod(ns, name)
		}
		return nil, false
	}, log)
	a := cluster.New(central, node, cluster.Options{NodeName: name, ClusterDir: cfg.ClusterManifestDir(),
		NodeIP: cfg.Cluster.NodeIP, KubeletPort: port, Logger: log})
	agent.Store(a)
	a.Run(ctx)
	return 0
}

// setUp reads the config and the kubeconfig into a client of the cluster's
// API server (and the client certificate file it names, if any). Nothing
// is contacted yet.
func setUp(o options) (kubernetes.Interface, string, *config.Config, error) {
	cfg, err := config.Load(o.configPath)
	if err != nil {
		return nil, "", nil, err
	}
	if o.socket != "" {
		cfg.Socket = o.socket
	}
	if o.kubeconfig != "" {
		cfg.Cluster.Kubeconfig = o.kubeconfig
	}
	if o.stateDir != "" {
		cfg.StateDir = o.stateDir
	}
	if err := cfg.Validate(); err != nil {
		return nil, "", nil, fmt.Errorf("config %s: %w", cfg.Source, err)
	}
	if !cfg.Cluster.Joined() {
		return nil, "", nil, fmt.Errorf("config %s: cluster.kubeconfig is not set: this podhost is standalone (docs/cluster.md)", sourceName(cfg))
	}
	rc, err := cluster.ClientConfig(cfg.Cluster.Kubeconfig, userAgent())
	if err != nil {
		return nil, "", nil, err
	}
	c, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, "", nil, fmt.Errorf("cluster.kubeconfig %s: %w", cfg.Cluster.Kubeconfig, err)
	}
	return c, rc.CertFile, cfg, nil
}

func sourceName(cfg *config.Config) string {
	if cfg.Source == "" {
		return config.DefaultPath + " (absent: defaults)"
	}
	return cfg.Source
}

// waitForDaemon returns the name of the daemon's Node once it answers
// (every 100 ms doubling to 7 s, one line until the error changes); false
// when ctx ended first.
func waitForDaemon(ctx context.Context, local kubernetes.Interface, socket string, log *slog.Logger) (string, bool) {
	var last string
	for backoff := 100 * time.Millisecond; ; backoff = min(2*backoff, 7*time.Second) {
		name, err := localnode.NodeName(ctx, local)
		if err == nil {
			return name, true
		}
		if err.Error() != last {
			last = err.Error()
			log.Warn("waiting for the podhost daemon", "socket", socket, "err", err)
		}
		select {
		case <-ctx.Done():
			return "", false
		case <-time.After(backoff):
		}
	}
}

func userAgent() string { return "podhost-cluster/" + version.Version }

// newLogger logs text to stderr, as the daemon (PODHOST_LOG_LEVEL).
func newLogger(w io.Writer) *slog.Logger {
	level := slog.LevelInfo
	_ = level.UnmarshalText([]byte(strings.ToUpper(os.Getenv("PODHOST_LOG_LEVEL"))))
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}
