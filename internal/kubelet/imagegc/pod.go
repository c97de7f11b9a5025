package imagegc

import corev1 "k8s.io/api/core/v1"

// PodImages lists the images of pod's containers (init, regular,
// ephemeral) and of its image volumes (pinned while a manifest names them,
// as a container's).
func PodImages(p *corev1.Pod) []string {
	var out []string
	for _, v := range p.Spec.Volumes {
		if v.Image != nil {
			out = append(out, v.Image.Reference)
		}
	}
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
