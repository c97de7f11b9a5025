package podview

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// DefaultContainerAnnotation names the container kubectl logs, exec and
// attach use when none is given (KEP 2227).
const DefaultContainerAnnotation = "kubectl.kubernetes.io/default-container"

// DefaultContainer is the container kubectl picks when none is given
// (kubectl's podcmd.FindOrDefaultContainerByName): the one the
// default-container annotation names, else the first app container. note
// is kubectl's "Defaulted container …" line for stderr when the first one
// was picked among several (empty otherwise).
func DefaultContainer(p *corev1.Pod) (name, note string) {
	if len(p.Spec.Containers) == 0 {
		return "", ""
	}
	if a := p.Annotations[DefaultContainerAnnotation]; a != "" {
		for _, c := range append(append([]corev1.Container{}, p.Spec.InitContainers...), p.Spec.Containers...) {
			if c.Name == a {
				return a, ""
			}
		}
	}
	name = p.Spec.Containers[0].Name
	if len(p.Spec.Containers) > 1 || len(p.Spec.InitContainers) > 0 {
		note = fmt.Sprintf("Defaulted container %q out of: %s", name, allContainerNames(p))
	}
	return name, note
}

// allContainerNames is kubectl's list: "app, side (init)".
func allContainerNames(p *corev1.Pod) string {
	var names []string
	for _, c := range p.Spec.Containers {
		names = append(names, c.Name)
	}
	for _, c := range p.Spec.InitContainers {
		names = append(names, c.Name+" (init)")
	}
	return strings.Join(names, ", ")
}
