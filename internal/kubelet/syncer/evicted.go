package syncer

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/kubelet/status"
)

// ReasonEvicted is the status reason of a pod the eviction manager evicted
// (the kubelet's eviction.Reason).
const ReasonEvicted = "Evicted"

// MarkEvicted records that the eviction manager evicts the pod (the
// kubelet's killPodFunc status function): from now on its status is
// Failed with reason Evicted and this message, and a SyncPod ends it. The
// caller then asks the pod workers to kill the pod.
func (s *Syncer) MarkEvicted(uid types.UID, message string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.evicted == nil {
		s.evicted = map[types.UID]string{}
	}
	s.evicted[uid] = message
}

// forgetEvicted drops the mark of a pod that is gone.
func (s *Syncer) forgetEvicted(uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.evicted, uid)
}

// endReason is why podhost ends the pod itself, or nil: past its active
// deadline, or evicted — marked now, or before a restart of podhost (the
// last status, kept in the state db, says Failed/Evicted: the pod is not
// started again, as the kubelet never restarts a pod in a terminal phase).
func (s *Syncer) endReason(pod *corev1.Pod) *status.Reason {
	if r := s.pastDeadline(pod); r != nil {
		return r
	}
	s.mu.Lock()
	msg, ok := s.evicted[pod.UID]
	s.mu.Unlock()
	if ok {
		return &status.Reason{Reason: ReasonEvicted, Message: msg}
	}
	if last := s.obs.LastStatus(pod.UID); last != nil && last.Phase == corev1.PodFailed && last.Reason == ReasonEvicted {
		return &status.Reason{Reason: last.Reason, Message: last.Message}
	}
	return nil
}

// isEvicted: the pod was evicted (now or before a restart).
func (s *Syncer) isEvicted(pod *corev1.Pod) bool {
	r := s.endReason(pod)
	return r != nil && r.Reason == ReasonEvicted
}
