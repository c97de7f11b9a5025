package status

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podhost/podhost/internal/model/qos"
)

// Condition reasons, as the kubelet's status package.
const (
	UnknownContainerStatuses = "UnknownContainerStatuses"
	PodCompleted             = "PodCompleted"
	PodFailed                = "PodFailed"
	ContainersNotReady       = "ContainersNotReady"
	ContainersNotInitialized = "ContainersNotInitialized"
	ReadinessGatesNotReady   = "ReadinessGatesNotReady"
)

// kubeletConditions are the condition types Compute owns.
var kubeletConditions = map[corev1.PodConditionType]bool{
	corev1.PodReadyToStartContainers: true, corev1.PodInitialized: true, corev1.PodReady: true,
	corev1.ContainersReady: true, corev1.PodScheduled: true,
	corev1.PodResizePending: true, corev1.PodResizeInProgress: true,
}

// conditions computes the kubelet-owned conditions in the kubelet's order
// (PodReadyToStartContainers, Initialized, Ready, ContainersReady,
// PodScheduled) after the previous conditions it does not own. A condition
// keeps its previous transition time while its status is unchanged.
func conditions(pod *corev1.Pod, s corev1.PodStatus, prev corev1.PodStatus, sandboxReady bool, now metav1.Time) []corev1.PodCondition {
	var out []corev1.PodCondition
	for _, c := range prev.Conditions {
		if !kubeletConditions[c.Type] {
			out = append(out, c)
		}
	}
	all := append(append([]corev1.ContainerStatus(nil), s.InitContainerStatuses...), s.ContainerStatuses...)
	sandbox := corev1.PodCondition{Type: corev1.PodReadyToStartContainers, Status: boolStatus(sandboxReady)}
	containersReady := containersReadyCondition(pod, all, s.Phase)
	out = append(out,
		sandbox,
		initializedCondition(pod, all, s.Phase),
		podReadyCondition(pod, out, containersReady),
		containersReady,
		corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
	)
	for i := range out {
		if !kubeletConditions[out[i].Type] {
			continue
		}
		out[i].LastTransitionTime = now
		for _, p := range prev.Conditions {
			if p.Type == out[i].Type && p.Status == out[i].Status && !p.LastTransitionTime.IsZero() {
				out[i].LastTransitionTime = p.LastTransitionTime
			}
		}
	}
	return out
}

func boolStatus(b bool) corev1.ConditionStatus {
	if b {
		return corev1.ConditionTrue
	}
	return corev1.ConditionFalse
}

// containersReadyCondition: every regular container and sidecar is ready.
func containersReadyCondition(pod *corev1.Pod, statuses []corev1.ContainerStatus, phase corev1.PodPhase) corev1.PodCondition {
	cond := corev1.PodCondition{Type: corev1.ContainersReady, Status: corev1.ConditionFalse}
	var unknown, unready []string
	check := func(name string) {
		switch st := find(statuses, name); {
		case st == nil:
			unknown = append(unknown, name)
		case !st.Ready:
			unready = append(unready, name)
		}
	}
	for i := range pod.Spec.InitContainers {
		if qos.IsRestartable(&pod.Spec.InitContainers[i]) {
			check(pod.Spec.InitContainers[i].Name)
		}
	}
	for _, c := range pod.Spec.Containers {
		check(c.Name)
	}
	switch {
	case phase == corev1.PodSucceeded && len(unknown) == 0:
		cond.Reason = PodCompleted
		return cond
	case phase == corev1.PodFailed:
		cond.Reason = PodFailed
		return cond
	}
	var msgs []string
	if len(unknown) > 0 {
		msgs = append(msgs, fmt.Sprintf("containers with unknown status: %s", unknown))
	}
	if len(unready) > 0 {
		msgs = append(msgs, fmt.Sprintf("containers with unready status: %s", unready))
	}
	if len(msgs) > 0 {
		cond.Reason, cond.Message = ContainersNotReady, strings.Join(msgs, ", ")
		return cond
	}
	cond.Status = corev1.ConditionTrue
	return cond
}

// podReadyCondition: ContainersReady and every readiness gate true.
func podReadyCondition(pod *corev1.Pod, conds []corev1.PodCondition, containersReady corev1.PodCondition) corev1.PodCondition {
	cond := corev1.PodCondition{Type: corev1.PodReady, Status: containersReady.Status,
		Reason: containersReady.Reason, Message: containersReady.Message}
	if containersReady.Status != corev1.ConditionTrue {
		return cond
	}
	var msgs []string
	for _, gate := range pod.Spec.ReadinessGates {
		var found *corev1.PodCondition
		for i := range conds {
			if conds[i].Type == gate.ConditionType {
				found = &conds[i]
			}
		}
		switch {
		case found == nil:
			msgs = append(msgs, fmt.Sprintf("corresponding condition of pod readiness gate %q does not exist.", string(gate.ConditionType)))
		case found.Status != corev1.ConditionTrue:
			msgs = append(msgs, fmt.Sprintf("the status of pod readiness gate %q is not \"True\", but %v", string(gate.ConditionType), found.Status))
		}
	}
	if len(msgs) > 0 {
		cond.Status, cond.Reason, cond.Message = corev1.ConditionFalse, ReadinessGatesNotReady, strings.Join(msgs, ", ")
	}
	return cond
}

// initializedCondition: every init container completed (sidecars started),
// or a regular container already started.
func initializedCondition(pod *corev1.Pod, statuses []corev1.ContainerStatus, phase corev1.PodPhase) corev1.PodCondition {
	cond := corev1.PodCondition{Type: corev1.PodInitialized, Status: corev1.ConditionTrue}
	var unknown, incomplete []string
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		st := find(statuses, c.Name)
		switch {
		case st == nil:
			unknown = append(unknown, c.Name)
		case qos.IsRestartable(c) && (st.Started == nil || !*st.Started):
			incomplete = append(incomplete, c.Name)
		case !qos.IsRestartable(c) && !st.Ready:
			incomplete = append(incomplete, c.Name)
		}
	}
	if phase == corev1.PodSucceeded && len(unknown) == 0 {
		cond.Reason = PodCompleted
		return cond
	}
	if regularStarted(pod, statuses) {
		return cond
	}
	var msgs []string
	if len(unknown) > 0 {
		msgs = append(msgs, fmt.Sprintf("containers with unknown status: %s", unknown))
	}
	if len(incomplete) > 0 {
		msgs = append(msgs, fmt.Sprintf("containers with incomplete status: %s", incomplete))
	}
	if len(msgs) > 0 {
		cond.Status, cond.Reason, cond.Message = corev1.ConditionFalse, ContainersNotInitialized, strings.Join(msgs, ", ")
	}
	return cond
}

// regularStarted: a regular container runs or ran (HasAnyRegularContainerStarted).
func regularStarted(pod *corev1.Pod, statuses []corev1.ContainerStatus) bool {
	for _, c := range pod.Spec.Containers {
		if st := find(statuses, c.Name); st != nil && (st.State.Running != nil || st.State.Terminated != nil) {
			return true
		}
	}
	return false
}
