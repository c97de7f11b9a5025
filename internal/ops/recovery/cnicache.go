package recovery

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/podhost/podhost/internal/model/records"
)

// cniEntry is the part of one libcni result-cache file
// (<cacheDir>/results/<network>-<containerID>-<ifname>, kind cniCacheV1)
// that a rebuild needs.
type cniEntry struct {
	Kind           string          `json:"kind"`
	ContainerID    string          `json:"containerId"`
	IfName         string          `json:"ifName"`
	CapabilityArgs json.RawMessage `json:"capabilityArgs,omitempty"`
	Result         json.RawMessage `json:"result,omitempty"`
}

// cniSandbox is what libcni's cache holds for one sandbox id.
type cniSandbox struct {
	Raw   []byte                // JSON array of the cached results, lo first (like network.Result.Raw)
	IPs   []string              // eth0 addresses, IPv4 first
	Ports []records.PortMapping // portMappings runtime config of eth0
}

// readCNICache indexes the result cache under dir by sandbox (container) id.
// Unreadable entries are skipped: the cache is a hint, not the truth.
func readCNICache(dir string) (map[string]*cniSandbox, error) {
	files, err := os.ReadDir(filepath.Join(dir, "results"))
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]*cniSandbox{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read CNI cache: %w", err)
	}
	byID := map[string][]cniEntry{}
	for _, f := range files {
		raw, err := os.ReadFile(filepath.Join(dir, "results", f.Name()))
		if err != nil {
			continue
		}
		var e cniEntry
		if json.Unmarshal(raw, &e) != nil || e.ContainerID == "" || len(e.Result) == 0 {
			continue
		}
		byID[e.ContainerID] = append(byID[e.ContainerID], e)
	}
	out := make(map[string]*cniSandbox, len(byID))
	for id, es := range byID {
		out[id] = toSandbox(es)
	}
	return out, nil
}

func toSandbox(es []cniEntry) *cniSandbox {
	sort.Slice(es, func(i, j int) bool { return ifOrder(es[i].IfName) < ifOrder(es[j].IfName) })
	var sb cniSandbox
	results := make([]json.RawMessage, 0, len(es))
	for _, e := range es {
		results = append(results, e.Result)
		if e.IfName == "lo" {
			continue
		}
		sb.IPs = append(sb.IPs, resultIPs(e.Result)...)
		sb.Ports = append(sb.Ports, capPorts(e.CapabilityArgs)...)
	}
	sb.Raw, _ = json.Marshal(results)
	sort.SliceStable(sb.IPs, func(i, j int) bool { return isV4(sb.IPs[i]) && !isV4(sb.IPs[j]) })
	return &sb
}

// ifOrder puts lo first, then eth0, eth1...
func ifOrder(name string) string {
	if name == "lo" {
		return ""
	}
	return name
}

// resultIPs reads ips[].address ("10.88.0.5/16") of a CNI 1.x/0.4 result.
func resultIPs(raw json.RawMessage) []string {
	var r struct {
		IPs []struct {
			Address string `json:"address"`
		} `json:"ips"`
	}
	if json.Unmarshal(raw, &r) != nil {
		return nil
	}
	var out []string
	for _, ip := range r.IPs {
		addr, _, _ := strings.Cut(ip.Address, "/")
		if net.ParseIP(addr) != nil {
			out = append(out, addr)
		}
	}
	return out
}

// capPorts reads the portMappings capability libcni cached with the result.
func capPorts(raw json.RawMessage) []records.PortMapping {
	var c struct {
		PortMappings []records.PortMapping `json:"portMappings"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &c) != nil {
		return nil
	}
	return c.PortMappings
}

func isV4(s string) bool { return net.ParseIP(s).To4() != nil }
