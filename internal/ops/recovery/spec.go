package recovery

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/host/network"
	"github.com/podhost/podhost/internal/model/records"
)

// specPorts are the sandbox's CNI port mappings as the syncer computes them.
func specPorts(pod *corev1.Pod) []records.PortMapping {
	in := network.PortMappings(pod)
	out := make([]records.PortMapping, 0, len(in))
	for _, p := range in {
		out = append(out, records.PortMapping{HostPort: p.HostPort, ContainerPort: p.ContainerPort, Protocol: p.Protocol, HostIP: p.HostIP})
	}
	return out
}
