package resize

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/desired/manifest"
	"github.com/podhost/podhost/internal/model/records"
)

// Checkpoint is the allocation checkpoint of pod as admitted: its summed
// requests (init containers included, as the manager's admission counts
// them), its host ports and each container's resources. The manager writes
// it at admission and on a resize; recovery writes the same when it
// rebuilds the state of a running pod.
func Checkpoint(pod *corev1.Pod) records.Allocation {
	a := records.Allocation{UID: pod.UID, FullName: manifest.FullName(pod), Requests: corev1.ResourceList{},
		Containers: Allocation(pod)}
	for _, c := range append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...) {
		for name, q := range c.Resources.Requests {
			cur := a.Requests[name]
			cur.Add(q)
			a.Requests[name] = cur
		}
		for _, p := range c.Ports {
			if p.HostPort != 0 {
				a.HostPorts = append(a.HostPorts, records.HostPort{HostIP: p.HostIP, Protocol: string(p.Protocol), Port: p.HostPort})
			}
		}
	}
	return a
}
