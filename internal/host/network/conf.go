package network

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/containernetworking/cni/libcni"
)

// Defaults for Config.
const (
	DefaultConfDir     = "/etc/podhost/cni/net.d" // not the host's /etc/cni/net.d: no clash with other CNI users
	DefaultCacheDir    = "/var/lib/podhost/cni-cache"
	DefaultIPAMDataDir = "/run/podhost/cni/networks"
	DefaultNetworkName = "podhost"
	DefaultBridge      = "podhost0"
	DefaultSubnet      = "10.89.0.0/16"
	DefaultConfFile    = "10-podhost.conflist"
	cniVersion         = "1.0.0"
)

// DefaultBinDirs are searched for CNI plugins when Config.BinDirs is empty.
var DefaultBinDirs = []string{"/opt/cni/bin", "/usr/lib/cni"}

// DefaultConfList is podhost's default network: a bridge with host-local
// IPAM (leases under dataDir, which lives in /run so a reboot drops them),
// outbound masquerading, hairpin, and portmap for hostPorts.
func DefaultConfList(name, bridge, subnet, dataDir string) ([]byte, error) {
	conf := map[string]any{
		"cniVersion": cniVersion,
		"name":       name,
		"plugins": []any{
			map[string]any{
				"type":        "bridge",
				"bridge":      bridge,
				"isGateway":   true,
				"ipMasq":      true,
				"hairpinMode": true,
				"ipam": map[string]any{
					"type":    "host-local",
					"ranges":  [][]map[string]string{{{"subnet": subnet}}},
					"routes":  []map[string]string{{"dst": "0.0.0.0/0"}},
					"dataDir": dataDir,
				},
			},
			map[string]any{
				"type":         "portmap",
				"capabilities": map[string]bool{"portMappings": true},
			},
		},
	}
	return json.MarshalIndent(conf, "", "  ")
}

// ensureConf writes the default conflist into cfg.ConfDir unless the dir
// already holds a network config (.conf, .conflist or .json). It reports
// whether it wrote one.
func ensureConf(cfg Config) (bool, error) {
	files, err := libcni.ConfFiles(cfg.ConfDir, []string{".conf", ".conflist", ".json"})
	if err != nil {
		return false, fmt.Errorf("read CNI conf dir %s: %w", cfg.ConfDir, err)
	}
	if len(files) > 0 {
		return false, nil
	}
	data, err := DefaultConfList(cfg.NetworkName, cfg.Bridge, cfg.Subnet, cfg.IPAMDataDir)
	if err != nil {
		return false, err
	}
	if err := os.MkdirAll(cfg.ConfDir, 0o755); err != nil {
		return false, fmt.Errorf("create CNI conf dir: %w", err)
	}
	path := filepath.Join(cfg.ConfDir, DefaultConfFile)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(data, '\n'), 0o644); err != nil {
		return false, fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return false, fmt.Errorf("install %s: %w", path, err)
	}
	return true, nil
}
