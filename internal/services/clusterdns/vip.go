package clusterdns

import (
	"hash/fnv"
	"math/big"
	"net/netip"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Headless is whether a Service has no virtual IP (clusterIP: None).
func Headless(svc *corev1.Service) bool { return svc.Spec.ClusterIP == corev1.ClusterIPNone }

// AssignVIPs gives each Service that is not headless a virtual IP of
// cidr, keyed "ns/name": the address its name hashes to, or, taken by a
// Service earlier in name order, the next free one. The same Services get
// the same addresses on every call, across restarts (nothing is stored).
// Services beyond the room of cidr get none.
func AssignVIPs(services []*corev1.Service, cidr netip.Prefix) map[string]netip.Addr {
	out := map[string]netip.Addr{}
	var keys []string
	for _, svc := range services {
		if !Headless(svc) {
			keys = append(keys, svc.Namespace+"/"+svc.Name)
		}
	}
	slices.Sort(keys)
	size := uint64(1) << min(uint(cidr.Addr().BitLen()-cidr.Bits()), 32)
	if size < 4 {
		return out
	}
	room := size - 2 // not the network's first (zero) and last address
	used := map[uint64]bool{}
	base := new(big.Int).SetBytes(cidr.Masked().Addr().AsSlice())
	for _, k := range keys {
		if uint64(len(used)) >= room {
			break
		}
		h := fnv.New64a()
		h.Write([]byte(k))
		off := h.Sum64() % room
		for used[off] {
			off = (off + 1) % room
		}
		used[off] = true
		ip := new(big.Int).Add(base, new(big.Int).SetUint64(off+1)).FillBytes(make([]byte, 4))
		out[k] = netip.AddrFrom4([4]byte(ip))
	}
	return out
}

// PortRule is one port of a virtual IP and its backends.
type PortRule struct {
	VIP      netip.Addr
	Port     uint16
	Protocol corev1.Protocol
	Backends []netip.AddrPort
	Comment  string
}

// PortRules are the virtual IPs' ports with their ready pods, each at the
// port's targetPort (a number, or the pod's container port of that name:
// a pod without it is no backend of that port, as the EndpointSlice
// controller's findPort). Only ports with backends are listed.
func PortRules(services []*corev1.Service, pods []*corev1.Pod, vips map[string]netip.Addr) []PortRule {
	var out []PortRule
	for _, svc := range services {
		vip, ok := vips[svc.Namespace+"/"+svc.Name]
		if !ok {
			continue
		}
		sel := labels.SelectorFromValidatedSet(svc.Spec.Selector)
		for _, sp := range svc.Spec.Ports {
			r := PortRule{VIP: vip, Port: uint16(sp.Port), Protocol: sp.Protocol,
				Comment: svc.Namespace + "/" + svc.Name + ":" + strconv.Itoa(int(sp.Port))}
			for _, p := range pods {
				ip, ok := endpoint(svc, sel, p, false)
				if !ok {
					continue
				}
				if tp, ok := targetPort(p, sp); ok {
					r.Backends = append(r.Backends, netip.AddrPortFrom(ip, tp))
				}
			}
			if len(r.Backends) > 0 {
				slices.SortFunc(r.Backends, func(a, b netip.AddrPort) int { return a.Compare(b) })
				out = append(out, r)
			}
		}
	}
	return out
}

// targetPort is the pod's port for sp.
func targetPort(p *corev1.Pod, sp corev1.ServicePort) (uint16, bool) {
	if sp.TargetPort.Type == intstr.Int {
		if sp.TargetPort.IntVal == 0 {
			return uint16(sp.Port), true
		}
		return uint16(sp.TargetPort.IntVal), true
	}
	n, ok := namedPort(p, sp.TargetPort.StrVal, sp.Protocol)
	return uint16(n), ok
}
