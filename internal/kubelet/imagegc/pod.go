package imagegc

import corev1 "k8s.io/api/core/v1"

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
