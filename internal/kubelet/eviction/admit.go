package eviction

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"

	"github.com/podhost/podhost/internal/kubelet/admission"
	"github.com/podhost/podhost/internal/model/qos"
)

// nodeConditionMessageFmt is the kubelet's message of a pod refused under
// pressure.
const nodeConditionMessageFmt = "The node had condition: %v. "

// Admit is the kubelet's eviction admit handler: with no pressure every
// pod is admitted; a critical pod always; under MemoryPressure alone a pod
// that is not BestEffort, or one tolerating the memory-pressure taint;
// otherwise the pod is refused (reason Evicted).
func Admit(conditions []corev1.NodeConditionType, pod *corev1.Pod) admission.Result {
	if len(conditions) == 0 || IsCritical(pod) {
		return admission.Result{Admit: true}
	}
	if len(conditions) == 1 && conditions[0] == corev1.NodeMemoryPressure {
		if qos.PodQOS(pod) != corev1.PodQOSBestEffort {
			return admission.Result{Admit: true}
		}
		taint := &corev1.Taint{Key: corev1.TaintNodeMemoryPressure, Effect: corev1.TaintEffectNoSchedule}
		if corev1helpers.TolerationsTolerateTaint(klog.Background(), pod.Spec.Tolerations, taint, false) {
			return admission.Result{Admit: true}
		}
	}
	return admission.Result{Reason: Reason, Message: fmt.Sprintf(nodeConditionMessageFmt, conditions)}
}

// Admit refuses a pod while the node is under pressure (Admit).
func (m *Manager) Admit(pod *corev1.Pod) admission.Result {
	m.mu.Lock()
	var on []corev1.NodeConditionType
	for _, t := range []corev1.NodeConditionType{corev1.NodeMemoryPressure, corev1.NodeDiskPressure} {
		if m.conditions[t].status {
			on = append(on, t)
		}
	}
	m.mu.Unlock()
	return Admit(on, pod)
}
