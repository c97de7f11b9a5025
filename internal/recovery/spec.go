package recovery

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/manifest"
	"github.com/podhost/podhost/internal/network"
	"github.com/podhost/podhost/internal/state"
)

// specPorts are the sandbox's CNI port mappings as the syncer computes them.
func specPorts(pod *corev1.Pod) []state.PortMapping {
	in := network.PortMappings(pod)
	out := make([]state.PortMapping, 0, len(in))
	for _, p := range in {
		out = append(out, state.PortMapping{HostPort: p.HostPort, ContainerPort: p.ContainerPort, Protocol: p.Protocol, HostIP: p.HostIP})
	}
	return out
}

// allocationFor is the admission checkpoint of pod, as the manager writes
// it when it admits the pod (internal/manager allocationFor; kept in step).
func allocationFor(pod *corev1.Pod) state.Allocation {
	a := state.Allocation{UID: pod.UID, FullName: manifest.FullName(pod), Requests: corev1.ResourceList{}}
	for _, c := range append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...) {
		for name, q := range c.Resources.Requests {
			cur := a.Requests[name]
			cur.Add(q)
			a.Requests[name] = cur
		}
		for _, p := range c.Ports {
			if p.HostPort != 0 {
				a.HostPorts = append(a.HostPorts, state.HostPort{HostIP: p.HostIP, Protocol: string(p.Protocol), Port: p.HostPort})
			}
		}
	}
	return a
}
