// Package config loads podhost's configuration file (/etc/podhost/config.yaml)
// and merges command-line flags over it.
//
// Precedence, lowest first: built-in defaults, the config file, flags the user
// actually set (pflag's Changed). The file is decoded strictly: an unknown key
// is an error naming the key.
//
// The CNI configuration directory defaults to /etc/podhost/cni/net.d, not the
// host's /etc/cni/net.d: podhost writes its own default conflist there, and
// sharing the host directory would clash with other CNI users on the machine
// (another container runtime or a kubelet would pick up our bridge network,
// or we theirs, since CNI uses the lexically first file in the directory).
package config

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"
)

// Default values.
const (
	DefaultPath              = "/etc/podhost/config.yaml"
	DefaultManifestDir       = "/etc/podhost/manifests"
	DefaultStateDir          = "/var/lib/podhost"
	DefaultLogDir            = "/var/log/pods"
	DefaultRunDir            = "/run/podhost"
	DefaultSocket            = "/run/podhost/podhost.sock"
	DefaultContainerdAddress = "/run/containerd/containerd.sock"
	DefaultNamespace         = "podhost"
	DefaultCNIConfDir        = "/etc/podhost/cni/net.d"
	DefaultCgroupDriver      = "auto"
	DefaultResyncPeriod      = time.Minute
	DefaultRelistPeriod      = 20 * time.Second
	DefaultLogMaxSize        = 10 << 20 // bytes
	DefaultLogMaxFiles       = 5
	// DefaultMaxPods is the pod capacity, as the kubelet's default.
	DefaultMaxPods      = 110
	DefaultCgroupParent = "podhost"
	// DefaultKubeAPIAddress: the Kubernetes API on loopback, the port an
	// API server answers on.
	DefaultKubeAPIAddress = "127.0.0.1:6443"
	// DefaultClusterDomain is the cluster domain clusters use.
	DefaultClusterDomain = "cluster.local"
	// DefaultServiceCIDR holds the Services' virtual IPs (a /16 of
	// Kubernetes' default service range).
	DefaultServiceCIDR = "10.96.0.0/16"
	// DefaultShimGroupSize pods share one containerd shim
	// (docs/decisions.md: the shim's memory vs a shim crash's reach).
	DefaultShimGroupSize = 8
	// DefaultRuntimeRequestTimeout is the kubelet's runtimeRequestTimeout.
	DefaultRuntimeRequestTimeout = 2 * time.Minute
	// MaxShimGroupSize bounds shimGroupSize.
	MaxShimGroupSize        = 64
	DefaultRegistryHostsDir = "/etc/containerd/certs.d"
	// MaxFileSize bounds the config file read.
	MaxFileSize = 1 << 20
)

// DefaultCNIBinDirs are searched, in order, for CNI plugin binaries.
var DefaultCNIBinDirs = []string{"/usr/lib/cni", "/opt/cni/bin"}

// DefaultAuthFiles are the docker config.json files read for registry
// credentials, in order: podhost's own first (as runtime.DefaultAuthFiles).
var DefaultAuthFiles = []string{"/etc/podhost/auth.json", "/root/.docker/config.json"}

// Cgroup drivers.
const (
	CgroupDriverAuto     = "auto"
	CgroupDriverSystemd  = "systemd"
	CgroupDriverCgroupfs = "cgroupfs"
)

// Config is podhost's resolved configuration.
type Config struct {
	// Source is the file the configuration was read from ("" when only
	// defaults apply): ExposedCredentials checks its mode.
	Source            string
	ManifestDir       string
	StateDir          string
	LogDir            string
	RunDir            string
	Socket            string
	ContainerdAddress string
	Namespace         string // containerd namespace
	CNIConfDir        string
	CNIBinDirs        []string
	CgroupDriver      string // auto|systemd|cgroupfs
	ResyncPeriod      time.Duration
	RelistPeriod      time.Duration // manifest dir relist
	// CrashLoopBackOffMax caps the crash-loop back-off (default 5m, the
	// kubelet's; at least 1s; below 10s it is also the first delay) — the
	// kubelet's crashLoopBackOff.maxContainerRestartPeriod.
	CrashLoopBackOffMax time.Duration
	// RuntimeRequestTimeout bounds one task create in containerd (default
	// 2m, the kubelet's runtimeRequestTimeout); one that runs out means its
	// shim group's shim is wedged, and podhost kills that shim.
	RuntimeRequestTimeout time.Duration
	// RollbackAfter is the default rollback window of pod updates
	// (internal/desired/rollout): an edit that replaces a pod whose new version is
	// not Ready within it brings the previous version back. 0 (default):
	// only pods with a podhost.io/rollback-after annotation.
	RollbackAfter time.Duration
	// SystemReserved is subtracted from node capacity (keys cpu, memory,
	// ephemeral-storage).
	SystemReserved         corev1.ResourceList
	AllowInsecureManifests bool
	LogMaxSize             int64 // bytes per container log file before rotation
	LogMaxFiles            int   // rotated files kept per container
	// MaxPods is the node's pod capacity (allocatable pods): admission
	// rejects pods beyond it with OutOfpods. Default 110 (the kubelet's).
	MaxPods int64
	// NodeLabels are added to the labels of the Node podhost stands for
	// (the kubelet's --node-labels), matched by pods' nodeSelector and
	// required node affinity at admission.
	NodeLabels map[string]string
	// ShimGroupSize is how many pods share one containerd shim process
	// (internal/host/shimgroup): default 8; 1 is one shim per pod, as the
	// kubelet's CRI. kill -9 of a shim ends the containers of every pod
	// in its group (they are restarted per restartPolicy).
	ShimGroupSize int
	// CgroupParent is the top-level pod cgroup: a cgroupfs directory
	// (/<parent>/burstable/pod<uid>) or the systemd slice prefix
	// (<parent>.slice). Default "podhost", or "podhost-<namespace>" when
	// Namespace is not the default one (DefaultCgroupParentFor): two
	// instances on one host must not share it, since housekeeping removes
	// the pod cgroups under it that it does not know.
	CgroupParent string
	// cgroupParentSet: CgroupParent was given (else it follows Namespace).
	cgroupParentSet bool
	// Snapshotter is containerd's snapshotter for pod rootfs ("" = overlayfs).
	Snapshotter string
	// LogDriver is the log driver binary the shims run per container
	// (cmd/podhost-log-driver). "" = podhost-log-driver in the directory of
	// the podhost executable; if that is missing, podhost itself
	// (`podhost log-driver`, with a warning). Key logDriver, flag --log-driver.
	LogDriver string
	// AuthFiles are docker config.json files with registry credentials,
	// searched in order ("" entries ignored). Default: /root/.docker/config.json
	// and /etc/podhost/auth.json.
	AuthFiles []string
	// RegistryHostsDir is containerd's certs.d-style registry host config
	// dir (<dir>/<host>/hosts.toml). Default /etc/containerd/certs.d.
	RegistryHostsDir string
	// Disk: log and image garbage collection (disk.go).
	Disk
	// Eviction: the eviction manager's thresholds (eviction.go).
	Eviction
	// ImagesDir holds image archives imported into containerd at start and
	// when one lands there, pinned against image GC
	// (internal/host/imagesdir). "" = <StateDir>/images (ImagesDirPath).
	ImagesDir string
	// ManifestURL: the HTTP manifest source (url.go).
	ManifestURL
	// Security: seccompDefault, podSecurity (security.go).
	Security
	// MetricsAddress is a TCP host:port where /metrics is also served
	// ("" = only on the API socket, the default).
	MetricsAddress string
	// KubeAPIAddress is the TCP host:port the Kubernetes API is served on
	// over TLS with client-certificate authentication (`podhost
	// kubeconfig`); "" serves it only on the API socket.
	KubeAPIAddress string
	// ShutdownGracePeriod is how long a node shutdown is delayed (a logind
	// delay inhibitor) for podhost to terminate its pods; 0 (the default)
	// turns graceful node shutdown off. ShutdownGracePeriodCriticalPods is
	// the part of it reserved for critical pods, terminated last. The
	// kubelet's keys and meaning.
	ShutdownGracePeriod             time.Duration
	ShutdownGracePeriodCriticalPods time.Duration
	// ClusterDomain is the kubelet's clusterDomain (--cluster-domain): a
	// pod with spec.subdomain has the domain
	// "<subdomain>.<namespace>.svc.<clusterDomain>" in its hosts file and,
	// with setHostnameAsFQDN, as its hostname; the zone of the cluster DNS.
	// Default "cluster.local" (what clusters use; "" makes the domain end in
	// "svc.", as the kubelet's without it, and turns the cluster DNS off).
	ClusterDomain string
	// Cluster: joining a Kubernetes cluster as a node (cluster.go).
	Cluster Cluster
	// ClusterDNS serves the manifests' Services' names to the pods from the
	// pod network's gateway address, the nameserver of ClusterFirst pods
	// (internal/services/clusterdns). Default true.
	ClusterDNS bool
	// ServiceCIDR is where Services' virtual IPs come from (DNAT to their
	// ready pods, for the pods); "" leaves every Service headless.
	ServiceCIDR string
}

// file is the on-disk form; pointers tell "absent" from "zero".
type file struct {
	ManifestDir            *string            `json:"manifestDir"`
	StateDir               *string            `json:"stateDir"`
	LogDir                 *string            `json:"logDir"`
	RunDir                 *string            `json:"runDir"`
	Socket                 *string            `json:"socket"`
	ContainerdAddress      *string            `json:"containerdAddress"`
	Namespace              *string            `json:"namespace"`
	CNIConfDir             *string            `json:"cniConfDir"`
	CNIBinDirs             []string           `json:"cniBinDirs"`
	CgroupDriver           *string            `json:"cgroupDriver"`
	ResyncPeriod           *string            `json:"resyncPeriod"`
	RelistPeriod           *string            `json:"relistPeriod"`
	CrashLoopBackOffMax    *string            `json:"crashLoopBackOffMax"`
	RuntimeRequestTimeout  *string            `json:"runtimeRequestTimeout"`
	RollbackAfter          *string            `json:"rollbackAfter"`
	SystemReserved         map[string]string  `json:"systemReserved"`
	AllowInsecureManifests *bool              `json:"allowInsecureManifests"`
	LogMaxSize             *resource.Quantity `json:"logMaxSize"`
	LogMaxFiles            *int               `json:"logMaxFiles"`
	MaxPods                *int64             `json:"maxPods"`
	NodeLabels             map[string]string  `json:"nodeLabels"`
	ShimGroupSize          *int               `json:"shimGroupSize"`
	CgroupParent           *string            `json:"cgroupParent"`
	Snapshotter            *string            `json:"snapshotter"`
	LogDriver              *string            `json:"logDriver"`
	MetricsAddress         *string            `json:"metricsAddress"`
	KubeAPIAddress         *string            `json:"kubeAPIAddress"`
	AuthFiles              []string           `json:"authFiles"`
	RegistryHostsDir       *string            `json:"registryHostsDir"`
	diskFile
	evictionFile
	ImagesDir           *string `json:"imagesDir"`
	ShutdownGracePeriod *string `json:"shutdownGracePeriod"`
	// ShutdownGracePeriodCriticalPods: see Config.
	ShutdownGracePeriodCriticalPods *string      `json:"shutdownGracePeriodCriticalPods"`
	ClusterDomain                   *string      `json:"clusterDomain"`
	Cluster                         *clusterFile `json:"cluster"`
	ClusterDNS                      *bool        `json:"clusterDNS"`
	ServiceCIDR                     *string      `json:"serviceCIDR"`
	manifestURLFile
	securityFile
}

// Default returns the built-in defaults.
func Default() *Config {
	return &Config{
		ManifestDir:           DefaultManifestDir,
		StateDir:              DefaultStateDir,
		LogDir:                DefaultLogDir,
		RunDir:                DefaultRunDir,
		Socket:                DefaultSocket,
		ContainerdAddress:     DefaultContainerdAddress,
		Namespace:             DefaultNamespace,
		CNIConfDir:            DefaultCNIConfDir,
		CNIBinDirs:            slices.Clone(DefaultCNIBinDirs),
		CgroupDriver:          DefaultCgroupDriver,
		ResyncPeriod:          DefaultResyncPeriod,
		RelistPeriod:          DefaultRelistPeriod,
		CrashLoopBackOffMax:   5 * time.Minute,
		RuntimeRequestTimeout: DefaultRuntimeRequestTimeout,
		SystemReserved:        corev1.ResourceList{},
		NodeLabels:            map[string]string{},
		LogMaxSize:            DefaultLogMaxSize,
		LogMaxFiles:           DefaultLogMaxFiles,
		MaxPods:               DefaultMaxPods,
		ShimGroupSize:         DefaultShimGroupSize,
		CgroupParent:          DefaultCgroupParent,
		AuthFiles:             slices.Clone(DefaultAuthFiles),
		RegistryHostsDir:      DefaultRegistryHostsDir,
		Disk:                  defaultDisk(),
		Eviction:              defaultEviction(),
		ManifestURL:           ManifestURL{ManifestURLPeriod: DefaultManifestURLPeriod},
		KubeAPIAddress:        DefaultKubeAPIAddress,
		Security:              defaultSecurity(),
		ClusterDomain:         DefaultClusterDomain,
		ClusterDNS:            true,
		Cluster:               Cluster{KubeletPort: DefaultKubeletPort},
		ServiceCIDR:           DefaultServiceCIDR,
	}
}

// Load reads the config file at path over the defaults and validates the
// result. An empty path means DefaultPath, which may be missing (defaults
// apply); an explicitly given path must exist.
func Load(path string) (*Config, error) {
	explicit := path != ""
	if !explicit {
		path = DefaultPath
	}
	data, err := readLimited(path)
	if err != nil {
		if !explicit && errors.Is(err, fs.ErrNotExist) {
			return Default(), nil
		}
		return nil, fmt.Errorf("config: %w", err)
	}
	c, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	c.Source = path
	return c, nil
}

func readLimited(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("%s: file too large (max %d bytes)", path, MaxFileSize)
	}
	return data, nil
}

// Parse decodes config file content strictly over the defaults and validates.
func Parse(data []byte) (*Config, error) {
	var f file
	if err := yaml.UnmarshalStrict(data, &f); err != nil {
		return nil, err
	}
	c := Default()
	if err := f.applyTo(c); err != nil {
		return nil, err
	}
	c.scopeByNamespace()
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// DefaultCgroupParentFor is the cgroup parent of an instance using
// containerd namespace ns that sets none: "podhost" for the default
// namespace (existing installs keep their paths), "podhost-<ns>" otherwise.
func DefaultCgroupParentFor(ns string) string {
	if ns == "" || ns == DefaultNamespace {
		return DefaultCgroupParent
	}
	return DefaultCgroupParent + "-" + ns
}

// scopeByNamespace derives defaults that must differ between instances
// from Namespace (see docs/robustness.md, "Two instances on one host").
func (c *Config) scopeByNamespace() {
	if !c.cgroupParentSet {
		c.CgroupParent = DefaultCgroupParentFor(c.Namespace)
	}
}

func setString(dst *string, src *string) {
	if src != nil {
		*dst = *src
	}
}

func (f *file) applyTo(c *Config) error {
	setString(&c.ManifestDir, f.ManifestDir)
	setString(&c.StateDir, f.StateDir)
	setString(&c.LogDir, f.LogDir)
	setString(&c.RunDir, f.RunDir)
	setString(&c.Socket, f.Socket)
	setString(&c.ContainerdAddress, f.ContainerdAddress)
	setString(&c.Namespace, f.Namespace)
	setString(&c.CNIConfDir, f.CNIConfDir)
	setString(&c.CgroupDriver, f.CgroupDriver)
	setString(&c.CgroupParent, f.CgroupParent)
	c.cgroupParentSet = c.cgroupParentSet || f.CgroupParent != nil
	setString(&c.Snapshotter, f.Snapshotter)
	setString(&c.LogDriver, f.LogDriver)
	setString(&c.RegistryHostsDir, f.RegistryHostsDir)
	f.diskFile.applyTo(&c.Disk)
	f.securityFile.applyTo(&c.Security)
	setString(&c.ImagesDir, f.ImagesDir)
	setString(&c.MetricsAddress, f.MetricsAddress)
	setString(&c.KubeAPIAddress, f.KubeAPIAddress)
	setString(&c.ClusterDomain, f.ClusterDomain)
	f.Cluster.applyTo(&c.Cluster)
	if f.ClusterDNS != nil {
		c.ClusterDNS = *f.ClusterDNS
	}
	setString(&c.ServiceCIDR, f.ServiceCIDR)
	if f.AuthFiles != nil {
		c.AuthFiles = f.AuthFiles
	}
	if f.CNIBinDirs != nil {
		c.CNIBinDirs = f.CNIBinDirs
	}
	if f.AllowInsecureManifests != nil {
		c.AllowInsecureManifests = *f.AllowInsecureManifests
	}
	if f.LogMaxFiles != nil {
		c.LogMaxFiles = *f.LogMaxFiles
	}
	if f.MaxPods != nil {
		c.MaxPods = *f.MaxPods
	}
	if f.NodeLabels != nil {
		c.NodeLabels = f.NodeLabels
	}
	if f.ShimGroupSize != nil {
		c.ShimGroupSize = *f.ShimGroupSize
	}
	if f.LogMaxSize != nil {
		c.LogMaxSize = f.LogMaxSize.Value()
	}
	if err := f.manifestURLFile.applyTo(&c.ManifestURL); err != nil {
		return err
	}
	if err := f.evictionFile.applyTo(&c.Eviction); err != nil {
		return err
	}
	var err error
	if c.ResyncPeriod, err = parseDuration("resyncPeriod", f.ResyncPeriod, c.ResyncPeriod); err != nil {
		return err
	}
	if c.RelistPeriod, err = parseDuration("relistPeriod", f.RelistPeriod, c.RelistPeriod); err != nil {
		return err
	}
	if c.CrashLoopBackOffMax, err = parseDuration("crashLoopBackOffMax", f.CrashLoopBackOffMax, c.CrashLoopBackOffMax); err != nil {
		return err
	}
	if c.CrashLoopBackOffMax < time.Second {
		return fmt.Errorf("crashLoopBackOffMax: must be at least 1s")
	}
	if c.RuntimeRequestTimeout, err = parseDuration("runtimeRequestTimeout", f.RuntimeRequestTimeout, c.RuntimeRequestTimeout); err != nil {
		return err
	}
	if c.RollbackAfter, err = parseDuration("rollbackAfter", f.RollbackAfter, c.RollbackAfter); err != nil {
		return err
	}
	if c.ShutdownGracePeriod, err = parseDuration("shutdownGracePeriod", f.ShutdownGracePeriod, c.ShutdownGracePeriod); err != nil {
		return err
	}
	if c.ShutdownGracePeriodCriticalPods, err = parseDuration("shutdownGracePeriodCriticalPods",
		f.ShutdownGracePeriodCriticalPods, c.ShutdownGracePeriodCriticalPods); err != nil {
		return err
	}
	return parseReserved(f.SystemReserved, c.SystemReserved)
}

func parseDuration(key string, s *string, def time.Duration) (time.Duration, error) {
	if s == nil {
		return def, nil
	}
	d, err := time.ParseDuration(*s)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", key, err)
	}
	return d, nil
}

func parseReserved(in map[string]string, out corev1.ResourceList) error {
	for k, v := range in {
		switch corev1.ResourceName(k) {
		case corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage:
		default:
			return fmt.Errorf("systemReserved.%s: unsupported resource (want cpu, memory or ephemeral-storage)", k)
		}
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return fmt.Errorf("systemReserved.%s: %w", k, err)
		}
		if q.Sign() < 0 {
			return fmt.Errorf("systemReserved.%s: %s is negative", k, v)
		}
		out[corev1.ResourceName(k)] = q
	}
	return nil
}

// ImagesDirPath is the images directory: ImagesDir, else
// <StateDir>/images (as k3s' agent/images under its data dir).
func (c *Config) ImagesDirPath() string {
	if c.ImagesDir != "" {
		return c.ImagesDir
	}
	return filepath.Join(c.StateDir, "images")
}
