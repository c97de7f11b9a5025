package config

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/spf13/pflag"
)

// Flag names (a contract: scripts and tests rely on them).
const (
	FlagConfig            = "config"
	FlagSocket            = "socket"
	FlagManifestDir       = "manifest-dir"
	FlagStateDir          = "state-dir"
	FlagLogDir            = "log-dir"
	FlagRunDir            = "run-dir"
	FlagContainerdAddress = "containerd-address"
	FlagNamespace         = "namespace"
	FlagCNIConfDir        = "cni-conf-dir"
	FlagCNIBinDir         = "cni-bin-dir"
	FlagCgroupDriver      = "cgroup-driver"
	FlagResyncPeriod      = "resync-period"
	FlagSystemReserved    = "system-reserved"
	FlagMaxPods           = "max-pods"
	FlagLogDriver         = "log-driver"
	FlagMetricsAddress    = "metrics-address"
	FlagKubeAPIAddress    = "kube-api-address"
)

// copyField copies one flag-bound field from src to dst.
var copyField = map[string]func(dst, src *Config){
	FlagSocket:            func(d, s *Config) { d.Socket = s.Socket },
	FlagManifestDir:       func(d, s *Config) { d.ManifestDir = s.ManifestDir },
	FlagStateDir:          func(d, s *Config) { d.StateDir = s.StateDir },
	FlagLogDir:            func(d, s *Config) { d.LogDir = s.LogDir },
	FlagRunDir:            func(d, s *Config) { d.RunDir = s.RunDir },
	FlagContainerdAddress: func(d, s *Config) { d.ContainerdAddress = s.ContainerdAddress },
	FlagNamespace:         func(d, s *Config) { d.Namespace = s.Namespace },
	FlagCNIConfDir:        func(d, s *Config) { d.CNIConfDir = s.CNIConfDir },
	FlagCNIBinDir:         func(d, s *Config) { d.CNIBinDirs = slices.Clone(s.CNIBinDirs) },
	FlagCgroupDriver:      func(d, s *Config) { d.CgroupDriver = s.CgroupDriver },
	FlagResyncPeriod:      func(d, s *Config) { d.ResyncPeriod = s.ResyncPeriod },
	FlagSystemReserved:    func(d, s *Config) { d.SystemReserved = s.SystemReserved.DeepCopy() },
	FlagMaxPods:           func(d, s *Config) { d.MaxPods = s.MaxPods },
	FlagLogDriver:         func(d, s *Config) { d.LogDriver = s.LogDriver },
	FlagMetricsAddress:    func(d, s *Config) { d.MetricsAddress = s.MetricsAddress },
	FlagKubeAPIAddress:    func(d, s *Config) { d.KubeAPIAddress = s.KubeAPIAddress },
}

// BindGlobalFlags registers --config (into path), --socket and
// --manifest-dir on fs, bound to c's fields. Use a Default() config as c so
// the help shows the defaults; merge with MergeFlags or Resolve.
func (c *Config) BindGlobalFlags(fs *pflag.FlagSet, path *string) {
	fs.StringVar(path, FlagConfig, "", "config file (default "+DefaultPath+", optional)")
	fs.StringVar(&c.Socket, FlagSocket, c.Socket, "API socket path")
	fs.StringVar(&c.ManifestDir, FlagManifestDir, c.ManifestDir, "manifest directory")
}

// BindDaemonFlags registers the `podhost daemon` flags on fs, bound to c.
func (c *Config) BindDaemonFlags(fs *pflag.FlagSet) {
	fs.StringVar(&c.StateDir, FlagStateDir, c.StateDir, "state directory (bbolt database)")
	fs.StringVar(&c.LogDir, FlagLogDir, c.LogDir, "pod log directory")
	fs.StringVar(&c.RunDir, FlagRunDir, c.RunDir, "runtime directory (pinned namespaces, per-pod files)")
	fs.StringVar(&c.ContainerdAddress, FlagContainerdAddress, c.ContainerdAddress, "containerd socket address")
	fs.StringVar(&c.Namespace, FlagNamespace, c.Namespace, "containerd namespace")
	fs.StringVar(&c.CNIConfDir, FlagCNIConfDir, c.CNIConfDir, "CNI configuration directory (podhost's own)")
	fs.StringSliceVar(&c.CNIBinDirs, FlagCNIBinDir, c.CNIBinDirs, "CNI plugin directory (repeatable or comma-separated)")
	fs.StringVar(&c.CgroupDriver, FlagCgroupDriver, c.CgroupDriver, "cgroup driver: auto, systemd or cgroupfs")
	fs.DurationVar(&c.ResyncPeriod, FlagResyncPeriod, c.ResyncPeriod, "periodic pod resync interval")
	fs.Var(&reservedFlag{c: c}, FlagSystemReserved, "resources kept for the system, subtracted from node allocatable (e.g. cpu=500m,memory=512Mi)")
	fs.Int64Var(&c.MaxPods, FlagMaxPods, c.MaxPods, "pod capacity: pods beyond it are rejected with OutOfpods")
	fs.StringVar(&c.LogDriver, FlagLogDriver, c.LogDriver, "container log driver binary (default: podhost-log-driver beside the podhost executable)")
	fs.StringVar(&c.MetricsAddress, FlagMetricsAddress, c.MetricsAddress, "also serve /metrics on this TCP host:port (default: only on the API socket)")
	fs.StringVar(&c.KubeAPIAddress, FlagKubeAPIAddress, c.KubeAPIAddress, `serve the Kubernetes API over TLS with client certificates on this TCP host:port ("" = only on the API socket)`)
}

// reservedFlag parses --system-reserved cpu=500m,memory=512Mi.
type reservedFlag struct{ c *Config }

func (f *reservedFlag) String() string {
	if f.c == nil || len(f.c.SystemReserved) == 0 {
		return ""
	}
	var parts []string
	for k, v := range f.c.SystemReserved {
		parts = append(parts, string(k)+"="+v.String())
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}

func (f *reservedFlag) Set(v string) error {
	in := map[string]string{}
	for _, kv := range strings.Split(v, ",") {
		k, val, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok {
			return fmt.Errorf("%q: want name=quantity", kv)
		}
		in[k] = val
	}
	f.c.SystemReserved = corev1.ResourceList{}
	return parseReserved(in, f.c.SystemReserved)
}

func (f *reservedFlag) Type() string { return "list" }

// BindContainerdFlags registers --containerd-address and --namespace only
// (for commands that talk to containerd directly, like `images`).
func (c *Config) BindContainerdFlags(fs *pflag.FlagSet) {
	fs.StringVar(&c.ContainerdAddress, FlagContainerdAddress, c.ContainerdAddress, "containerd socket address")
	fs.StringVar(&c.Namespace, FlagNamespace, c.Namespace, "containerd namespace")
}

// MergeFlags copies into c every field whose flag was set by the user
// (pflag Changed) in fs, taking the value from flags (the config the flags
// were bound to). Flags not registered in fs are ignored.
func (c *Config) MergeFlags(flags *Config, fs *pflag.FlagSet) {
	for name, cp := range copyField {
		if f := fs.Lookup(name); f != nil && f.Changed {
			cp(c, flags)
		}
	}
}

// Resolve loads the config file at path (see Load), merges the flags the
// user set in fs from flags, and validates the result.
func Resolve(path string, flags *Config, fs *pflag.FlagSet) (*Config, error) {
	c, err := Load(path)
	if err != nil {
		return nil, err
	}
	c.MergeFlags(flags, fs)
	c.scopeByNamespace()
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}
