package daemon

import (
	"context"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"reflect"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/config"
	"github.com/podhost/podhost/internal/desired/source"
	"github.com/podhost/podhost/internal/host/network"
	"github.com/podhost/podhost/internal/host/sandbox"
	"github.com/podhost/podhost/internal/services/clusterdns"
)

// dnsCoalesce gathers the status changes of a burst (pods starting, probes
// turning) into one rebuild of the DNS table.
const dnsCoalesce = 100 * time.Millisecond

// clusterDNS serves the manifests' Services to the pods
// (internal/services/clusterdns): the Services come from the sources'
// snapshots (tap), the pods and their readiness from the backend. A nil
// *clusterDNS is off: every method is a no-op.
type clusterDNS struct {
	srv      *clusterdns.Server
	pc       net.PacketConn // bound by newClusterDNS
	ln       net.Listener
	gateway  netip.Addr
	domain   string
	netw     *network.Manager
	subnet   netip.Prefix          // the pod network
	vipCIDR  netip.Prefix          // config serviceCIDR; invalid: no virtual IPs
	rules    []network.ServiceRule // installed by the last successful sync
	services atomic.Pointer[[]*corev1.Service]
	changed  chan struct{} // a new set of Services (cap 1)
	log      *slog.Logger
}

// newClusterDNS builds the pods' DNS server on the pod network's gateway,
// bound before any pod is given it as nameserver, or returns nil (config
// clusterDNS false, no clusterDomain, a network without a bridge gateway,
// port 53 of the gateway taken: then ClusterFirst pods get the host's
// resolvers, as before).
func newClusterDNS(ctx context.Context, cfg *config.Config, netw *network.Manager, log *slog.Logger) *clusterDNS {
	if !cfg.ClusterDNS || cfg.ClusterDomain == "" {
		return nil
	}
	gw, subnet, err := netw.Gateway()
	if err != nil {
		log.Warn("no cluster DNS: ClusterFirst pods use the host's resolvers", "err", err)
		return nil
	}
	c := &clusterDNS{gateway: gw, domain: cfg.ClusterDomain, changed: make(chan struct{}, 1), log: log, netw: netw, subnet: subnet}
	if cidr, err := netip.ParsePrefix(cfg.ServiceCIDR); err == nil && !cidr.Overlaps(subnet) {
		c.vipCIDR = cidr.Masked()
	} else if cfg.ServiceCIDR != "" {
		log.Warn("no Service virtual IPs: serviceCIDR overlaps the pod network", "serviceCIDR", cfg.ServiceCIDR, "podNetwork", subnet)
	}
	c.srv = clusterdns.New(clusterdns.Config{Addr: gw, Subnet: subnet, ClusterDomain: cfg.ClusterDomain,
		Upstreams: hostUpstreams("/etc/resolv.conf", gw), Logger: log})
	if c.pc, c.ln, err = c.srv.Listen(ctx); err != nil {
		log.Error("no cluster DNS: ClusterFirst pods use the host's resolvers", "err", err)
		return nil
	}
	return c
}

// hostUpstreams are the host's nameservers (port 53), the gateway itself
// left out (a host resolving through a pod network's DNS would loop).
func hostUpstreams(path string, self netip.Addr) []string {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	rc, _ := sandbox.ParseResolvConf(b) // a bad line drops only itself
	var out []string
	for _, ns := range rc.Nameservers {
		if a, err := netip.ParseAddr(ns); err == nil && a != self {
			out = append(out, net.JoinHostPort(a.String(), "53"))
		}
	}
	return out
}

// nameservers are the ClusterFirst pods' nameservers.
func (c *clusterDNS) nameservers() []string {
	if c == nil {
		return nil
	}
	return []string{c.gateway.String()}
}

// tap passes in's snapshots on, keeping their Services.
func (c *clusterDNS) tap(ctx context.Context, g *errgroup.Group, in <-chan source.Snapshot) <-chan source.Snapshot {
	if c == nil {
		return in
	}
	return relay(ctx, g, in, func(snap source.Snapshot) source.Snapshot {
		c.services.Store(&snap.Services)
		select {
		case c.changed <- struct{}{}:
		default:
		}
		return snap
	})
}

// run serves DNS and keeps its table current until ctx ends. A server
// that cannot listen is logged; the daemon runs on.
func (c *clusterDNS) run(ctx context.Context, g *errgroup.Group, b *backend) {
	if c == nil {
		return
	}
	g.Go(func() error {
		if err := c.srv.Serve(ctx, c.pc, c.ln); err != nil {
			c.log.Error("cluster DNS stopped: Services' names do not resolve", "err", err)
		}
		return nil
	})
	g.Go(func() error { c.follow(ctx, b); return nil })
}

// follow rebuilds the table at each change of the Services or of a pod,
// from the first full sync on (before it the pods are not all known: a
// restart would drop the rules of pods still running).
func (c *clusterDNS) follow(ctx context.Context, b *backend) {
	select {
	case <-b.st.Ready():
	case <-ctx.Done():
		return
	}
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		st, pods := b.st.Changed(), b.mgr.Changed()
		c.sync(b.Pods())
		select {
		case <-st:
		case <-pods:
		case <-c.changed:
		case <-ctx.Done():
			return
		}
		t.Reset(dnsCoalesce)
		select {
		case <-t.C:
		case <-ctx.Done():
			return
		}
	}
}

// sync installs the DNS table and the virtual IPs' rules for the current
// Services and pods. Before the first snapshot nothing is known of the
// Services: the rules a previous run left stay until it comes.
func (c *clusterDNS) sync(pods []*corev1.Pod) {
	p := c.services.Load()
	var svcs []*corev1.Service
	if p != nil {
		svcs = *p
	}
	var vips map[string]netip.Addr
	if c.vipCIDR.IsValid() {
		vips = clusterdns.AssignVIPs(svcs, c.vipCIDR)
	}
	if p != nil {
		c.syncRules(clusterdns.PortRules(svcs, pods, vips))
	}
	c.srv.SetTable(clusterdns.BuildTable(svcs, pods, c.domain, vips))
}

// serviceEnv is the service links of namespace's Services with a
// virtual IP (the kubelet's enableServiceLinks variables), for the
// containers starting now; none without cluster DNS or before the first
// snapshot.
func (c *clusterDNS) serviceEnv(namespace string) []corev1.EnvVar {
	if c == nil || !c.vipCIDR.IsValid() {
		return nil
	}
	p := c.services.Load()
	if p == nil {
		return nil
	}
	return clusterdns.ServiceEnv(*p, clusterdns.AssignVIPs(*p, c.vipCIDR), namespace)
}

// syncRules rewrites the nat rules when they differ from the installed
// ones (or the last write failed).
func (c *clusterDNS) syncRules(prs []clusterdns.PortRule) {
	rules := make([]network.ServiceRule, 0, len(prs))
	for _, r := range prs {
		rules = append(rules, network.ServiceRule{VIP: r.VIP, Port: r.Port, Protocol: strings.ToLower(string(r.Protocol)),
			Backends: r.Backends, Comment: r.Comment})
	}
	if c.rules != nil && reflect.DeepEqual(rules, c.rules) {
		return
	}
	if err := c.netw.SyncServices(c.subnet, c.vipCIDR, rules); err != nil {
		c.log.Error("Service virtual IPs: iptables", "err", err)
		c.rules = nil // try again at the next change
		return
	}
	c.rules = rules
}
