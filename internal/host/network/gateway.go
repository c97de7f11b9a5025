package network

import (
	"encoding/json"
	"errors"
	"net/netip"
)

// bridgeIPAM is what Gateway reads of a bridge plugin's config: its
// host-local IPAM ranges (or the older single subnet). Parsed here rather
// than by host-local's allocator package, which links netlink and
// knftables into the daemon for these few fields.
type bridgeIPAM struct {
	Type      string `json:"type"`
	IsGateway bool   `json:"isGateway"`
	IPAM      struct {
		ipRange
		Ranges [][]ipRange `json:"ranges"`
	} `json:"ipam"`
}

type ipRange struct {
	Subnet  string `json:"subnet"`
	Gateway string `json:"gateway"`
}

// Gateway is the pod network's gateway address on the host and its IPv4
// subnet: the first IPv4 range of the bridge plugin (isGateway) of the
// loaded network, its gateway as host-local defaults it (the subnet's
// first address). The cluster DNS listens there.
func (m *Manager) Gateway() (netip.Addr, netip.Prefix, error) {
	for _, n := range m.cni.GetConfig().Networks {
		if n.IFName != podIfName || n.Config == nil {
			continue
		}
		for _, p := range n.Config.Plugins {
			if gw, subnet, ok := bridgeGateway([]byte(p.Source)); ok {
				return gw, subnet, nil
			}
		}
	}
	return netip.Addr{}, netip.Prefix{}, errors.New("cni: the pod network has no bridge plugin with isGateway and an IPv4 host-local range")
}

// bridgeGateway parses one plugin config: a bridge with isGateway, the
// first IPv4 range, its gateway defaulted as host-local's Canonicalize
// does (the subnet's first address).
func bridgeGateway(src []byte) (netip.Addr, netip.Prefix, bool) {
	var c bridgeIPAM
	if json.Unmarshal(src, &c) != nil || c.Type != "bridge" || !c.IsGateway {
		return netip.Addr{}, netip.Prefix{}, false
	}
	ranges := []ipRange{c.IPAM.ipRange}
	for _, set := range c.IPAM.Ranges {
		ranges = append(ranges, set...)
	}
	for _, r := range ranges {
		subnet, err := netip.ParsePrefix(r.Subnet)
		if err != nil || !subnet.Addr().Is4() {
			continue
		}
		subnet = subnet.Masked()
		if r.Gateway == "" {
			return subnet.Addr().Next(), subnet, true
		}
		gw, err := netip.ParseAddr(r.Gateway)
		return gw, subnet, err == nil && subnet.Contains(gw)
	}
	return netip.Addr{}, netip.Prefix{}, false
}
