package status

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The kubelet's nodeshutdown reason and message, and the DisruptionTarget
// condition it sets on pods it terminates.
const (
	ReasonNodeShutdown      = "Terminated"
	MessageNodeShutdown     = "Pod was terminated in response to imminent node shutdown."
	ConditionDisruption     = corev1.DisruptionTarget
	ReasonTerminationByNode = "TerminationByKubelet"
)

// IsNodeShutdown reports whether st was set by MarkNodeShutdown.
func IsNodeShutdown(st corev1.PodStatus) bool {
	return st.Reason == ReasonNodeShutdown && st.Message == MessageNodeShutdown
}

func applyNodeShutdown(st corev1.PodStatus, now time.Time) corev1.PodStatus {
	st = *st.DeepCopy()
	st.Phase, st.Reason, st.Message = corev1.PodFailed, ReasonNodeShutdown, MessageNodeShutdown
	for i := range st.Conditions {
		if st.Conditions[i].Type == ConditionDisruption {
			return st
		}
	}
	st.Conditions = append(st.Conditions, corev1.PodCondition{Type: ConditionDisruption, Status: corev1.ConditionTrue,
		Reason: ReasonTerminationByNode, Message: MessageNodeShutdown, LastTransitionTime: metav1.NewTime(now)})
	return st
}

// clearNodeShutdown turns a persisted status of a pod terminated by a node
// shutdown back into a non-terminal one (Pending, no reason, no
// DisruptionTarget), keeping container statuses and the start time: the
// pod runs again after the reboot. Other statuses are returned unchanged.
func clearNodeShutdown(st corev1.PodStatus) corev1.PodStatus {
	if !IsNodeShutdown(st) {
		return st
	}
	st = *st.DeepCopy()
	st.Phase, st.Reason, st.Message = corev1.PodPending, "", ""
	conds := st.Conditions[:0]
	for _, c := range st.Conditions {
		if c.Type != ConditionDisruption {
			conds = append(conds, c)
		}
	}
	st.Conditions = conds
	return st
}
