package clusterdns

import (
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Table is the cluster domain's names and their addresses. The zero
// Table has no names.
type Table struct {
	names map[string][]netip.Addr // lower-case FQDN with the trailing dot
	srvs  map[string][]SRV        // _<port>._<proto>.<service FQDN>
}

// SRV is one target of a Service's named port: a pod's name under the
// Service (its hostname, else its IP with dashes, as CoreDNS names
// endpoints) and the port.
type SRV struct {
	Target string
	Port   uint16
}

// SRV returns the targets of an SRV name.
func (t *Table) SRV(name string) []SRV { return t.srvs[name] }

// Lookup returns the addresses of name (a lower-case FQDN) and whether the
// name exists: a Service without ready pods exists with none.
func (t *Table) Lookup(name string) ([]netip.Addr, bool) {
	ips, ok := t.names[name]
	return ips, ok
}

// Len is the number of names.
func (t *Table) Len() int { return len(t.names) }

// BuildTable computes the names of services as a cluster's DNS answers
// them, from the pods podhost runs (whatever declared them). A Service
// with a virtual IP in vips ("ns/name") is NAME.NAMESPACE.svc.<domain>
// with that address, and its named ports' SRV names point at that name.
// Any other (headless, or without a virtual IP) is the IPs of the pods its
// selector selects in its namespace that have an IP, are neither finished
// nor terminating, are Ready (or publishNotReadyAddresses) and serve each
// of its ports at the Service's port (a named targetPort: a container
// port of that name and protocol with that number); each such pod is also
// a name under the Service (its hostname when its subdomain is the
// Service, else its IP with dashes) and a target of _<port>._<proto>.NAME.…
// for each named port (the Kubernetes DNS specification for headless
// Services). A Service without a selector has no pods.
func BuildTable(services []*corev1.Service, pods []*corev1.Pod, clusterDomain string, vips map[string]netip.Addr) *Table {
	t := &Table{names: map[string][]netip.Addr{}, srvs: map[string][]SRV{}}
	domain := strings.ToLower(strings.TrimSuffix(clusterDomain, "."))
	for _, svc := range services {
		fqdn := strings.ToLower(svc.Name + "." + svc.Namespace + ".svc." + domain + ".")
		if vip, ok := vips[svc.Namespace+"/"+svc.Name]; ok {
			t.addVIP(svc, fqdn, vip)
			continue
		}
		ips := t.names[fqdn]
		sel := labels.SelectorFromValidatedSet(svc.Spec.Selector)
		for _, p := range pods {
			ip, ok := endpoint(svc, sel, p, true)
			if !ok {
				continue
			}
			ips = append(ips, ip)
			t.addEndpoint(svc, fqdn, p, ip)
		}
		slices.SortFunc(ips, func(a, b netip.Addr) int { return a.Compare(b) })
		t.names[fqdn] = slices.Compact(ips)
	}
	return t
}

// addVIP answers a Service with a virtual IP by it, and its named ports'
// SRV names by the Service's own name (the Kubernetes DNS specification).
func (t *Table) addVIP(svc *corev1.Service, fqdn string, vip netip.Addr) {
	t.names[fqdn] = []netip.Addr{vip}
	for _, sp := range svc.Spec.Ports {
		if sp.Name != "" {
			name := "_" + strings.ToLower(sp.Name) + "._" + strings.ToLower(string(sp.Protocol)) + "." + fqdn
			t.srvs[name] = []SRV{{Target: fqdn, Port: uint16(sp.Port)}}
		}
	}
}

// addEndpoint names the pod under the Service and adds it to the SRV
// names of the Service's named ports.
func (t *Table) addEndpoint(svc *corev1.Service, fqdn string, p *corev1.Pod, ip netip.Addr) {
	label := strings.ReplaceAll(ip.String(), ".", "-")
	if h := p.Spec.Hostname; h != "" && p.Spec.Subdomain == svc.Name {
		label = strings.ToLower(h)
	}
	target := label + "." + fqdn
	t.names[target] = []netip.Addr{ip}
	for _, sp := range svc.Spec.Ports {
		if sp.Name == "" {
			continue
		}
		name := "_" + strings.ToLower(sp.Name) + "._" + strings.ToLower(string(sp.Protocol)) + "." + fqdn
		t.srvs[name] = append(t.srvs[name], SRV{Target: target, Port: uint16(sp.Port)})
	}
}

// endpoint is the pod's address for svc, if svc selects and may use it
// (the EndpointSlice controller's rules on one node).
//
// With samePort (no virtual IP: clients connect to the pod at the
// Service's port), a pod whose named targetPort is another number does not
// serve the port and is left out.
func endpoint(svc *corev1.Service, sel labels.Selector, p *corev1.Pod, samePort bool) (netip.Addr, bool) {
	var none netip.Addr
	if p.Namespace != svc.Namespace || len(svc.Spec.Selector) == 0 || !sel.Matches(labels.Set(p.Labels)) {
		return none, false
	}
	if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return none, false
	}
	ip, err := netip.ParseAddr(p.Status.PodIP)
	if err != nil || !ip.Is4() {
		return none, false
	}
	if !svc.Spec.PublishNotReadyAddresses && !podReady(p) {
		return none, false
	}
	if !samePort {
		return ip, true
	}
	for _, sp := range svc.Spec.Ports {
		if sp.TargetPort.Type == intstr.String {
			if n, ok := namedPort(p, sp.TargetPort.StrVal, sp.Protocol); !ok || n != sp.Port {
				return none, false
			}
		}
	}
	return ip, true
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// namedPort is the number of the pod's container (or sidecar) port named
// name of protocol proto (the kubelet's findPort).
func namedPort(p *corev1.Pod, name string, proto corev1.Protocol) (int32, bool) {
	for _, cs := range [][]corev1.Container{p.Spec.Containers, p.Spec.InitContainers} {
		for _, c := range cs {
			for _, cp := range c.Ports {
				if cp.Name == name && cp.Protocol == proto {
					return cp.ContainerPort, true
				}
			}
		}
	}
	return 0, false
}
