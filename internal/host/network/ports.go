package network

import (
	"strings"

	gocni "github.com/containerd/go-cni"
	corev1 "k8s.io/api/core/v1"
)

// PortMapping is one hostPort (what the portmap plugin gets).
type PortMapping struct {
	HostPort, ContainerPort int32
	Protocol                string // tcp, udp or sctp (lower case)
	HostIP                  string // "" = all host addresses
}

// PortMappings lists the pod's hostPorts: every port with hostPort != 0 of
// its containers and sidecars (restartable init containers), in order,
// without duplicates. Protocol is lower-cased, TCP by default.
func PortMappings(pod *corev1.Pod) []PortMapping {
	var out []PortMapping
	seen := map[PortMapping]bool{}
	add := func(cs []corev1.Container, sidecarsOnly bool) {
		for i := range cs {
			c := &cs[i]
			if sidecarsOnly && (c.RestartPolicy == nil || *c.RestartPolicy != corev1.ContainerRestartPolicyAlways) {
				continue
			}
			for _, p := range c.Ports {
				if p.HostPort == 0 {
					continue
				}
				pm := PortMapping{HostPort: p.HostPort, ContainerPort: p.ContainerPort, Protocol: protocol(p.Protocol), HostIP: p.HostIP}
				if !seen[pm] {
					seen[pm] = true
					out = append(out, pm)
				}
			}
		}
	}
	add(pod.Spec.InitContainers, true)
	add(pod.Spec.Containers, false)
	return out
}

func protocol(p corev1.Protocol) string {
	if p == "" {
		return "tcp"
	}
	return strings.ToLower(string(p))
}

func toCNI(ports []PortMapping) []gocni.PortMapping {
	out := make([]gocni.PortMapping, 0, len(ports))
	for _, p := range ports {
		out = append(out, gocni.PortMapping{HostPort: p.HostPort, ContainerPort: p.ContainerPort, Protocol: p.Protocol, HostIP: p.HostIP})
	}
	return out
}
