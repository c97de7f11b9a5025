// Package resize holds the pure vocabulary of in-place pod resize (the
// kubelet's InPlacePodVerticalScaling): which containers' cpu/memory
// resources changed, whether their resizePolicy asks for a restart, the
// actuated-resources container label and the pending-resize annotation the
// manager puts on the pod it hands to the worker. See docs/ARCHITECTURE.md
// ("In-place resize").
package resize

import (
	"encoding/json"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/model/podstate"
	"github.com/podhost/podhost/internal/model/wellknown"
)

// Kind is what a container's resource change needs.
type Kind int

const (
	None    Kind = iota // allocated == actuated
	Update              // change the cgroups live
	Restart             // resizePolicy RestartContainer for a changed resource
)

// CPUMemory keeps only the cpu and memory requests and limits (the
// resources a resize changes).
func CPUMemory(r corev1.ResourceRequirements) corev1.ResourceRequirements {
	pick := func(l corev1.ResourceList) corev1.ResourceList {
		var out corev1.ResourceList
		for _, n := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if q, ok := l[n]; ok {
				if out == nil {
					out = corev1.ResourceList{}
				}
				out[n] = q.DeepCopy()
			}
		}
		return out
	}
	return corev1.ResourceRequirements{Requests: pick(r.Requests), Limits: pick(r.Limits)}
}

// Label is the value of wellknown.LabelResources for r.
func Label(r corev1.ResourceRequirements) string {
	b, _ := json.Marshal(CPUMemory(r))
	return string(b)
}

// Actuated reads a container's actuated resources from its label; ok is
// false for a container made before podhost recorded them.
func Actuated(c *podstate.Container) (corev1.ResourceRequirements, bool) {
	v, ok := c.Labels[wellknown.LabelResources]
	if !ok {
		return corev1.ResourceRequirements{}, false
	}
	var r corev1.ResourceRequirements
	if err := json.Unmarshal([]byte(v), &r); err != nil {
		return corev1.ResourceRequirements{}, false
	}
	return r, true
}

// Changed reports which of cpu and memory differ between a and b (requests
// or limits; a missing value equals zero).
func Changed(a, b corev1.ResourceRequirements) (cpu, mem bool) {
	diff := func(n corev1.ResourceName) bool {
		for _, pair := range [][2]corev1.ResourceList{{a.Requests, b.Requests}, {a.Limits, b.Limits}} {
			x, y := pair[0][n], pair[1][n]
			if x.Cmp(y) != 0 {
				return true
			}
		}
		return false
	}
	return diff(corev1.ResourceCPU), diff(corev1.ResourceMemory)
}

// Equal: same cpu and memory requests and limits.
func Equal(a, b corev1.ResourceRequirements) bool {
	cpu, mem := Changed(a, b)
	return !cpu && !mem
}

// Of decides what a running container needs to match its spec's
// resources: nothing, a live update, or — when its resizePolicy says
// RestartContainer for a changed resource — a restart. A container
// without the label (made before podhost recorded it) is updated to its
// spec's resources once (idempotent; the update labels it): what it runs
// with is unknown, and an edit's resources must not be silently skipped.
func Of(spec *corev1.Container, c *podstate.Container) Kind {
	act, ok := Actuated(c)
	if !ok {
		return Update
	}
	cpu, mem := Changed(spec.Resources, act)
	switch {
	case !cpu && !mem:
		return None
	case cpu && needsRestart(spec, corev1.ResourceCPU), mem && needsRestart(spec, corev1.ResourceMemory):
		return Restart
	}
	return Update
}

func needsRestart(c *corev1.Container, name corev1.ResourceName) bool {
	for _, p := range c.ResizePolicy {
		if p.ResourceName == name {
			return p.RestartPolicy == corev1.RestartContainer
		}
	}
	return false
}

// Pending is the pod's pending resize (reason "" when none).
func Pending(pod *corev1.Pod) (reason, message string) {
	v := pod.Annotations[wellknown.AnnotationResizePending]
	if v == "" {
		return "", ""
	}
	reason, message, _ = strings.Cut(v, ": ")
	return reason, message
}

// WithAllocation returns a copy of pod whose containers carry the allocated
// resources (by container name; containers not in alloc keep theirs).
func WithAllocation(pod *corev1.Pod, alloc map[string]corev1.ResourceRequirements) *corev1.Pod {
	out := pod.DeepCopy()
	for _, cs := range [][]corev1.Container{out.Spec.InitContainers, out.Spec.Containers} {
		for i := range cs {
			if r, ok := alloc[cs[i].Name]; ok {
				cs[i].Resources = *r.DeepCopy()
			}
		}
	}
	return out
}

// Allocation is the per-container resources of pod (the checkpoint's).
func Allocation(pod *corev1.Pod) map[string]corev1.ResourceRequirements {
	out := map[string]corev1.ResourceRequirements{}
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range cs {
			out[c.Name] = *c.Resources.DeepCopy()
		}
	}
	return out
}
