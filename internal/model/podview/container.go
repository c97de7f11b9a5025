package podview

import (
	"fmt"
	"slices"
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
	if a := p.Annotations[DefaultContainerAnnotation]; a != "" && slices.Contains(ContainerNames(p), a) {
		return a, ""
	}
	name = p.Spec.Containers[0].Name
	if len(p.Spec.Containers) > 1 || len(p.Spec.InitContainers) > 0 {
		note = fmt.Sprintf("Defaulted container %q out of: %s", name, allContainerNames(p))
	}
	return name, note
}

// ContainerNames is the names of the pod's init containers (sidecars
// included), then of its app containers: kubectl's --all-containers order.
func ContainerNames(p *corev1.Pod) []string {
	names := make([]string, 0, len(p.Spec.InitContainers)+len(p.Spec.Containers))
	for _, l := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for _, c := range l {
			names = append(names, c.Name)
		}
	}
	return names
}

// ContainerStatus is the status of the pod's (init or app) container name,
// nil if it has none yet.
func ContainerStatus(p *corev1.Pod, name string) *corev1.ContainerStatus {
	for _, l := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
		for i := range l {
			if l[i].Name == name {
				return &l[i]
			}
		}
	}
	return nil
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

// NotRunning is podhost's words for an exec into a container that does
// not run ("container done is not running (state: terminated: Completed,
// exit code 0)"); "" when it runs. A container without a status is "not
// created".
func NotRunning(p *corev1.Pod, name string) string {
	cs := ContainerStatus(p, name)
	switch {
	case cs == nil:
		return fmt.Sprintf("container %s is not running (state: not created)", name)
	case cs.State.Running == nil:
		return fmt.Sprintf("container %s is not running (state: %s)", name, StateSummary(cs.State))
	}
	return ""
}

// StateSummary describes a container state in a few words: "waiting:
// CrashLoopBackOff", "terminated: Completed, exit code 0".
func StateSummary(s corev1.ContainerState) string {
	switch {
	case s.Running != nil:
		return "running"
	case s.Terminated != nil:
		reason := s.Terminated.Reason
		if reason == "" {
			reason = "Unknown"
		}
		return fmt.Sprintf("terminated: %s, exit code %d", reason, s.Terminated.ExitCode)
	case s.Waiting != nil && s.Waiting.Reason != "":
		return "waiting: " + s.Waiting.Reason
	}
	return "waiting"
}
