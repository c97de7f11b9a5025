package status

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podhost/podhost/internal/kubelet/resize"
	"github.com/podhost/podhost/internal/model/podstate"
)

// setResize fills what in-place resize shows, as Kubernetes 1.33+: each
// running regular container's allocatedResources (the pod's — allocated —
// requests) and resources (actuated, from the runtime's label), the
// conditions PodResizePending (the manager did not allocate the manifest's
// resources: Infeasible or Deferred) and PodResizeInProgress (allocated
// differs from actuated; reason Error with the last failure), and the
// deprecated status.resize.
func setResize(pod *corev1.Pod, in Inputs, s *corev1.PodStatus) {
	inProgress := in.ResizeError != ""
	for i := range s.ContainerStatuses {
		st := &s.ContainerStatuses[i]
		c := &pod.Spec.Containers[i]
		latest := newest(in.Running, c.Name)
		if latest == nil || latest.State != podstate.StateRunning {
			continue
		}
		alloc := resize.CPUMemory(c.Resources)
		if len(alloc.Requests) > 0 {
			st.AllocatedResources = alloc.Requests
		}
		act, ok := resize.Actuated(latest)
		if !ok {
			act = alloc
		}
		if len(act.Requests) > 0 || len(act.Limits) > 0 {
			st.Resources = &act
		}
		if !resize.Equal(alloc, act) {
			inProgress = true
		}
	}
	var conds []corev1.PodCondition
	if reason, msg := resize.Pending(pod); reason != "" {
		conds = append(conds, corev1.PodCondition{Type: corev1.PodResizePending, Status: corev1.ConditionTrue, Reason: reason, Message: msg})
		s.Resize = corev1.PodResizeStatus(reason) //nolint:staticcheck // deprecated, still shown (issue 12: status.resize)
	}
	if inProgress {
		c := corev1.PodCondition{Type: corev1.PodResizeInProgress, Status: corev1.ConditionTrue}
		if in.ResizeError != "" {
			c.Reason, c.Message = corev1.PodReasonError, in.ResizeError
		}
		conds = append(conds, c)
		if s.Resize == "" { //nolint:staticcheck // as above
			s.Resize = corev1.PodResizeStatusInProgress //nolint:staticcheck // as above
		}
	}
	s.Conditions = append(s.Conditions, conds...)
}

// keepResizeTransitions carries the previous transition time of an
// unchanged resize condition.
func keepResizeTransitions(s *corev1.PodStatus, prev corev1.PodStatus, now metav1.Time) {
	for i := range s.Conditions {
		c := &s.Conditions[i]
		if c.Type != corev1.PodResizePending && c.Type != corev1.PodResizeInProgress {
			continue
		}
		c.LastTransitionTime = now
		for _, p := range prev.Conditions {
			if p.Type == c.Type && p.Status == c.Status && p.Reason == c.Reason && !p.LastTransitionTime.IsZero() {
				c.LastTransitionTime = p.LastTransitionTime
			}
		}
	}
}
