package status

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// IsRejected reports whether st is the status RejectPod sets: phase Failed,
// message starting with RejectedPrefix.
func IsRejected(st corev1.PodStatus) bool {
	return st.Phase == corev1.PodFailed && strings.HasPrefix(st.Message, RejectedPrefix)
}

// dropRejectionLocked forgets the rejection status of a pod that is
// admitted now: until its first sync it has no status, as a new pod (with
// the kubelet an edited static pod is a new pod), and never the terminal
// phase it was rejected with (a pod never leaves a terminal phase).
func (m *Manager) dropRejectionLocked(uid types.UID) {
	if st, ok := m.statuses[uid]; ok && IsRejected(st) {
		delete(m.statuses, uid)
		m.seq++
		m.revs[uid] = m.seq // the API's views rebuild
	}
}
