package clusterdns

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// ServiceEnv is what the kubelet gives a container of namespace whose pod
// has enableServiceLinks (the default): for each Service of the namespace
// with a virtual IP, the variables of k8s.io/kubernetes/pkg/kubelet/envvars
// FromServices — NAME_SERVICE_HOST, NAME_SERVICE_PORT (and
// NAME_SERVICE_PORT_<PORTNAME>), and the docker-links NAME_PORT,
// NAME_PORT_<port>_<PROTO>{,_PROTO,_PORT,_ADDR} — NAME the Service's name
// upper-cased with '-' as '_'. Headless Services (no virtual IP) give none,
// as on a cluster. In Service name order (the kubelet's map has none).
// vips are AssignVIPs'.
func ServiceEnv(services []*corev1.Service, vips map[string]netip.Addr, namespace string) []corev1.EnvVar {
	var mine []*corev1.Service
	for _, s := range services {
		if s.Namespace == namespace {
			mine = append(mine, s)
		}
	}
	return FromServices(mine, func(s *corev1.Service) netip.Addr { return vips[s.Namespace+"/"+s.Name] })
}

// FromServices is the kubelet's envvars.FromServices: the variables of
// services (each name once) that have a virtual IP (vip) and a port, in
// name order.
func FromServices(services []*corev1.Service, vip func(*corev1.Service) netip.Addr) []corev1.EnvVar {
	var mine []*corev1.Service
	for _, s := range services {
		if vip(s).IsValid() && len(s.Spec.Ports) > 0 {
			mine = append(mine, s)
		}
	}
	slices.SortFunc(mine, func(a, b *corev1.Service) int { return strings.Compare(a.Name, b.Name) })
	var out []corev1.EnvVar
	add := func(name, value string) { out = append(out, corev1.EnvVar{Name: name, Value: value}) }
	for _, s := range mine {
		ip := vip(s).String()
		prefix := strings.ToUpper(strings.ReplaceAll(s.Name, "-", "_"))
		add(prefix+"_SERVICE_HOST", ip)
		add(prefix+"_SERVICE_PORT", strconv.Itoa(int(s.Spec.Ports[0].Port)))
		for _, p := range s.Spec.Ports {
			if p.Name != "" {
				add(prefix+"_SERVICE_PORT_"+strings.ToUpper(strings.ReplaceAll(p.Name, "-", "_")), strconv.Itoa(int(p.Port)))
			}
		}
		for i, p := range s.Spec.Ports {
			proto := string(p.Protocol)
			if proto == "" {
				proto = string(corev1.ProtocolTCP)
			}
			url := fmt.Sprintf("%s://%s:%d", strings.ToLower(proto), ip, p.Port)
			if i == 0 {
				add(prefix+"_PORT", url)
			}
			pp := fmt.Sprintf("%s_PORT_%d_%s", prefix, p.Port, strings.ToUpper(proto))
			add(pp, url)
			add(pp+"_PROTO", strings.ToLower(proto))
			add(pp+"_PORT", strconv.Itoa(int(p.Port)))
			add(pp+"_ADDR", ip)
		}
	}
	return out
}
