// Package network wires pods to CNI through containerd/go-cni (see docs/ARCHITECTURE.md): loopback plus the first network config in ConfDir (podhost's
// default bridge conflist is written there when the dir has none), hostPorts
// through the portmap plugin's portMappings capability.
//
// Results survive podhost restarts twice: libcni caches every ADD result
// under CacheDir (default /var/lib/podhost/cni-cache, on disk) and DEL hands
// it to the plugins as prevResult; podhost also persists Result.Raw in its
// bbolt sandbox record. IPAM leases live in IPAMDataDir (default under /run)
// so a reboot releases them with the namespaces.
package network

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sort"
	"time"

	gocni "github.com/containerd/go-cni"
	"github.com/containernetworking/cni/libcni"
	"golang.org/x/sys/unix"
)

// Config configures New. Empty fields get the Default* values.
type Config struct {
	ConfDir  string
	BinDirs  []string
	CacheDir string // libcni result cache (process-wide, see New)

	// The default network, written only when ConfDir has no config (an
	// existing file is never rewritten: delete it to apply new values).
	IPAMDataDir string // host-local lease dir
	NetworkName string
	Bridge      string
	Subnet      string

	Logger *slog.Logger
}

// Result of a Setup.
type Result struct {
	IPs []string // pod IPs of eth0, IPv4 first
	Raw []byte   // JSON array of the CNI results, one per network (lo, eth0)
}

// Manager sets pods up on the CNI network.
type Manager struct {
	cni     gocni.CNI
	cfg     Config
	log     *slog.Logger
	netName string // name of the loaded pod network
	fw      Firewall
}

const (
	ifPrefix        = "eth"
	podIfName       = ifPrefix + "0"
	teardownTimeout = time.Minute
)

// New loads the CNI config, writing podhost's default conflist into ConfDir
// first if it has none. libcni's cache dir is a package variable that
// go-cni offers no option for, so CacheDir is set process-wide (the last
// New wins; podhost has one Manager).
func New(cfg Config) (*Manager, error) {
	cfg = withDefaults(cfg)
	wrote, err := ensureConf(cfg)
	if err != nil {
		return nil, fmt.Errorf("cni: %w", err)
	}
	if wrote {
		cfg.Logger.Info("wrote default CNI network config", "dir", cfg.ConfDir, "bridge", cfg.Bridge, "subnet", cfg.Subnet)
	}
	libcni.CacheDir = cfg.CacheDir
	c, err := gocni.New(
		gocni.WithMinNetworkCount(2),
		gocni.WithPluginConfDir(cfg.ConfDir),
		gocni.WithPluginDir(cfg.BinDirs),
		gocni.WithInterfacePrefix(ifPrefix),
	)
	if err != nil {
		return nil, fmt.Errorf("cni: init: %w", err)
	}
	if err := c.Load(gocni.WithLoNetwork, gocni.WithDefaultConf); err != nil {
		return nil, fmt.Errorf("cni: load config from %s: %w", cfg.ConfDir, err)
	}
	m := &Manager{cni: c, cfg: cfg, log: cfg.Logger, netName: cfg.NetworkName}
	for _, n := range c.GetConfig().Networks {
		if n.IFName == podIfName {
			m.netName = n.Config.Name
		}
	}
	return m, nil
}

func withDefaults(c Config) Config {
	def := func(s *string, v string) {
		if *s == "" {
			*s = v
		}
	}
	def(&c.ConfDir, DefaultConfDir)
	def(&c.CacheDir, DefaultCacheDir)
	def(&c.IPAMDataDir, DefaultIPAMDataDir)
	def(&c.NetworkName, DefaultNetworkName)
	def(&c.Bridge, DefaultBridge)
	def(&c.Subnet, DefaultSubnet)
	if len(c.BinDirs) == 0 {
		c.BinDirs = DefaultBinDirs
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Setup runs CNI ADD for sandbox id in netnsPath. On failure it runs DEL
// (under a fresh timeout) so nothing stays allocated.
//
// First it checks the localnet firewall (EnsureFirewall), at most once a
// minute: a pod with hostPorts is not set up without it (portmap opens the
// bridge to 127.0.0.0/8 for them); for others a failure is logged.
func (m *Manager) Setup(ctx context.Context, id, netnsPath string, ports []PortMapping) (*Result, error) {
	if err := m.fw.EnsureEvery(ctx); err != nil {
		if len(ports) > 0 {
			return nil, fmt.Errorf("cni: setup %s: hostPorts need the localnet firewall: %w", id, err)
		}
		m.log.Warn("localnet firewall not installed", "err", err)
	}
	opts := []gocni.NamespaceOpts{gocni.WithCapabilityPortMap(toCNI(ports))}
	res, err := m.cni.Setup(ctx, id, netnsPath, opts...)
	if err == nil {
		var out *Result
		if out, err = newResult(res); err == nil {
			return out, nil
		}
	}
	tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), teardownTimeout)
	defer cancel()
	if terr := m.cni.Remove(tctx, id, netnsPath, opts...); terr != nil {
		m.log.Error("cni: rollback of failed setup", "sandbox", id, "err", terr)
	}
	return nil, fmt.Errorf("cni: setup %s: %w", id, err)
}

// EnsureFirewall installs the localnet firewall (localnet.go) if missing:
// the daemon calls it at start.
func (m *Manager) EnsureFirewall(ctx context.Context) error { return m.fw.Ensure(ctx) }

func newResult(res *gocni.Result) (*Result, error) {
	raw, err := json.Marshal(res.Raw())
	if err != nil {
		return nil, fmt.Errorf("encode result: %w", err)
	}
	out := &Result{Raw: raw}
	if iface, ok := res.Interfaces[podIfName]; ok {
		for _, ipc := range iface.IPConfigs {
			out.IPs = append(out.IPs, ipc.IP.String())
		}
	}
	sort.SliceStable(out.IPs, func(i, j int) bool { return isV4(out.IPs[i]) && !isV4(out.IPs[j]) })
	if len(out.IPs) == 0 {
		return nil, fmt.Errorf("no IP on %s in the CNI result", podIfName)
	}
	return out, nil
}

func isV4(s string) bool { return net.ParseIP(s).To4() != nil }

// Teardown runs CNI DEL. netnsPath may be "" (or name a namespace that is
// gone, e.g. after a reboot): the plugins then only release what lives
// outside it (IPAM lease, portmap rules) and podhost removes the bridge
// plugin's masquerade rules itself. Not-found is success; idempotent.
// ports must be the mappings given to Setup (portmap needs them on DEL).
func (m *Manager) Teardown(ctx context.Context, id, netnsPath string, ports []PortMapping) error {
	if netnsPath != "" && !isNetNS(netnsPath) {
		netnsPath = ""
	}
	err := m.cni.Remove(ctx, id, netnsPath, gocni.WithCapabilityPortMap(toCNI(ports)))
	if err != nil && !errors.Is(err, gocni.ErrNotFound) {
		return fmt.Errorf("cni: teardown %s: %w", id, err)
	}
	if netnsPath == "" {
		found, err := cleanupMasq(m.netName, id)
		if err != nil {
			// Retried with the teardown: the sandbox is kept until then.
			return fmt.Errorf("cni: teardown %s: masquerade rules of a gone netns: %w", id, err)
		}
		if found {
			m.log.Info("cni: removed masquerade rules the bridge plugin left (netns gone)", "sandbox", id)
		}
	}
	return nil
}

// Check runs CNI CHECK on the pod network (eth0) of a set-up sandbox. It
// uses libcni directly: go-cni checks every network and stops at its
// loopback network, whose version (0.3.1) has no CHECK.
// Caveat: portmap up to v1.1.x (Debian bookworm ships 1.1.1) also looks for
// its DNAT chain in ip6tables, so CHECK fails for IPv4 hostPorts on hosts
// with ip6tables; treat a Check error as a hint, not as proof of breakage.
func (m *Manager) Check(ctx context.Context, id, netnsPath string, ports []PortMapping) error {
	for _, n := range m.cni.GetConfig().Networks {
		if n.IFName != podIfName {
			continue
		}
		list, err := libcni.ConfListFromBytes([]byte(n.Config.Source))
		if err != nil {
			return fmt.Errorf("cni: check %s: parse config: %w", id, err)
		}
		rt := &libcni.RuntimeConf{ContainerID: id, NetNS: netnsPath, IfName: podIfName,
			CapabilityArgs: map[string]any{"portMappings": toCNI(ports)}}
		if err := libcni.NewCNIConfig(m.cfg.BinDirs, nil).CheckNetworkList(ctx, list, rt); err != nil {
			return fmt.Errorf("cni: check %s: %w", id, err)
		}
		return nil
	}
	return fmt.Errorf("cni: check %s: no %s network loaded", id, podIfName)
}

// isNetNS tells whether path is a mounted namespace (nsfs).
func isNetNS(path string) bool {
	var st unix.Statfs_t
	return unix.Statfs(path, &st) == nil && st.Type == unix.NSFS_MAGIC
}
