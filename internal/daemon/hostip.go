package daemon

import (
	"context"
	"net"
	"os"
	"strings"
	"time"

	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// hostIPSources are what status.hostIP is chosen from (tests fake them).
type hostIPSources struct {
	hostname string                         // the node name: the host name, lowercased
	lookup   func(string) ([]net.IP, error) // net.LookupIP
	localIPs func() ([]net.IP, error)       // every interface's addresses
	bind     func() (net.IP, error)         // utilnet.ResolveBindAddress(nil)
}

// hostIP is the kubelet's node InternalIP (status.hostIP) on this host.
func hostIP() string {
	name, _ := os.Hostname()
	return chooseHostIP(hostIPSources{
		hostname: strings.ToLower(name),
		lookup:   lookupHost,
		localIPs: interfaceIPs,
		bind:     func() (net.IP, error) { return utilnet.ResolveBindAddress(nil) },
	})
}

// hostLookupTimeout bounds the host name lookup done while the daemon
// starts: a DNS server that drops queries must not hold the first sync
// (the kubelet looks it up in its node status loop instead).
const hostLookupTimeout = time.Second

// lookupHost is net.LookupIP within hostLookupTimeout (/etc/hosts answers
// at once; a slow DNS answer counts as none).
func lookupHost(name string) ([]net.IP, error) {
	ctx, cancel := context.WithTimeout(context.Background(), hostLookupTimeout)
	defer cancel()
	return net.DefaultResolver.LookupIP(ctx, "ip", name)
}

// chooseHostIP is the kubelet's NodeAddress setter without a cloud
// provider or --node-ip (pkg/kubelet/nodestatus/setters.go): the node
// name if it is an IP; else its addresses looked up (validateNodeIP: not
// loopback, multicast, link-local or unspecified, and on a local
// interface), IPv4 first; else ResolveBindAddress (a global address of
// the IPv4, then IPv6, default route's interface). Where the kubelet
// would fail its node status (no default route) podhost takes the first
// global unicast address of any interface, IPv4 first, and only on a host
// without one 127.0.0.1.
func chooseHostIP(src hostIPSources) string {
	if ip := net.ParseIP(src.hostname); ip != nil {
		return ip.String()
	}
	local, _ := src.localIPs()
	addrs, _ := src.lookup(src.hostname)
	var chosen net.IP
	for _, a := range addrs {
		if validNodeIP(a, local) && (chosen == nil || a.To4() != nil && chosen.To4() == nil) {
			chosen = a
		}
	}
	if chosen == nil {
		if ip, err := src.bind(); err == nil && ip != nil && !ip.IsLoopback() {
			chosen = ip
		}
	}
	if chosen == nil {
		chosen = firstGlobal(local)
	}
	if chosen == nil {
		return "127.0.0.1"
	}
	return chosen.String()
}

// validNodeIP is the kubelet's validateNodeIP.
func validNodeIP(ip net.IP, local []net.IP) bool {
	if ip.IsLoopback() || ip.IsMulticast() || ip.IsLinkLocalUnicast() || ip.IsUnspecified() {
		return false
	}
	for _, l := range local {
		if l.Equal(ip) {
			return true
		}
	}
	return false
}

// firstGlobal is the first global unicast address, IPv4 before IPv6.
func firstGlobal(ips []net.IP) net.IP {
	var v6 net.IP
	for _, ip := range ips {
		switch {
		case !ip.IsGlobalUnicast():
		case ip.To4() != nil:
			return ip
		case v6 == nil:
			v6 = ip
		}
	}
	return v6
}

func interfaceIPs() ([]net.IP, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, err
	}
	var ips []net.IP
	for _, a := range addrs {
		switch v := a.(type) {
		case *net.IPNet:
			ips = append(ips, v.IP)
		case *net.IPAddr:
			ips = append(ips, v.IP)
		}
	}
	return ips, nil
}
