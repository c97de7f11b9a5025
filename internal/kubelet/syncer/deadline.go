package syncer

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/kubelet/status"
)

// activeDeadlineSeconds, as the kubelet's activeDeadlineHandler.
const (
	ReasonDeadlineExceeded = "DeadlineExceeded"
	msgDeadlineExceeded    = "Pod was active on the node longer than the specified deadline"
)

// deadlineLeft is the time until the pod's activeDeadlineSeconds passes,
// counted from its status's startTime (kept across podhost restarts). ok is
// false when the pod has no deadline or no start time yet.
func deadlineLeft(pod *corev1.Pod, last *corev1.PodStatus, now time.Time) (left time.Duration, ok bool) {
	if pod.Spec.ActiveDeadlineSeconds == nil || last == nil || last.StartTime == nil || last.StartTime.IsZero() {
		return 0, false
	}
	allowed := time.Duration(*pod.Spec.ActiveDeadlineSeconds) * time.Second
	return allowed - now.Sub(last.StartTime.Time), true
}

// pastDeadline: the pod is past its active deadline, so its status is
// Failed/DeadlineExceeded (the kubelet's ShouldEvict).
func (s *Syncer) pastDeadline(pod *corev1.Pod) *status.Reason {
	if left, ok := deadlineLeft(pod, s.obs.LastStatus(pod.UID), s.now()); !ok || left > 0 {
		return nil
	}
	return &status.Reason{Reason: ReasonDeadlineExceeded, Message: msgDeadlineExceeded}
}

// enforceDeadline ends a pod past its active deadline: an event (Normal,
// as the kubelet's), the Failed status, and Terminal so the pod workers
// stop its containers with the grace period. It reports false if the pod
// still has time. An evicted pod is ended the same way (evicted.go).
func (s *Syncer) enforceDeadline(pod *corev1.Pod) (terminal bool) {
	if s.isEvicted(pod) {
		return true // the eviction manager recorded its event
	}
	r := s.pastDeadline(pod)
	if r == nil {
		return false
	}
	if last := s.obs.LastStatus(pod.UID); last == nil || (last.Phase != corev1.PodFailed && last.Phase != corev1.PodSucceeded) {
		s.podLog(pod).Info("pod past its active deadline", "activeDeadlineSeconds", *pod.Spec.ActiveDeadlineSeconds)
		s.obs.Event(pod.UID, corev1.EventTypeNormal, r.Reason, r.Message)
	}
	return true
}

// requeueAtDeadline asks for a sync when the pod's active deadline passes.
func (s *Syncer) requeueAtDeadline(pod *corev1.Pod, rq *requeue) {
	if left, ok := deadlineLeft(pod, s.obs.LastStatus(pod.UID), s.now()); ok {
		rq.after(max(left, 0))
	}
}
