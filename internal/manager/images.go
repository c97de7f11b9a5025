package manager

import corev1 "k8s.io/api/core/v1"

// ReferencedImages returns the image of every container of every pod in
// the manifest directory, admitted or not, running or not: image GC never
// removes them.
func (m *Manager) ReferencedImages() []string {
	m.cfgMu.Lock()
	pods := m.cfg.Pods()
	m.cfgMu.Unlock()
	var out []string
	for _, p := range pods {
		out = append(out, PodImages(p)...)
	}
	return out
}

// PodImages lists the images of pod's containers (init, regular, ephemeral).
func PodImages(p *corev1.Pod) []string {
	var out []string
	for _, c := range p.Spec.InitContainers {
		out = append(out, c.Image)
	}
	for _, c := range p.Spec.Containers {
		out = append(out, c.Image)
	}
	for _, c := range p.Spec.EphemeralContainers {
		out = append(out, c.Image)
	}
	return out
}
