package manager

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// graceTTL: how long a delete's grace period waits for its removal to
// arrive (the manifest dir's change is read within milliseconds; a
// removal that never comes must not shorten a later one).
const graceTTL = time.Minute

// graces are the grace periods deletes through the API asked for
// (`kubectl delete --grace-period`), by pod UID, until the removal of the
// pod's manifest reaches the manager: as the API server's
// deletionGracePeriodSeconds, they can only shorten the pod's own.
type graces struct {
	mu sync.Mutex
	m  map[types.UID]grace
}

type grace struct {
	seconds int64
	at      time.Time
}

// SetDeletionGrace records that the next removal of pod uid terminates it
// with at most seconds of grace period (0 and below: 1, as the kubelet).
func (m *Manager) SetDeletionGrace(uid types.UID, seconds int64) {
	m.graces.mu.Lock()
	defer m.graces.mu.Unlock()
	if m.graces.m == nil {
		m.graces.m = map[types.UID]grace{}
	}
	now := time.Now()
	for u, g := range m.graces.m {
		if now.Sub(g.at) > graceTTL {
			delete(m.graces.m, u)
		}
	}
	m.graces.m[uid] = grace{seconds: max(seconds, 1), at: now}
}

// apply returns pod, with its deletionGracePeriodSeconds set when a
// delete asked for a grace period (taken: once).
func (g *graces) apply(pod *corev1.Pod) *corev1.Pod {
	g.mu.Lock()
	defer g.mu.Unlock()
	gr, ok := g.m[pod.UID]
	if !ok || time.Since(gr.at) > graceTTL {
		return pod
	}
	delete(g.m, pod.UID)
	cp := pod.DeepCopy()
	cp.DeletionGracePeriodSeconds = &gr.seconds
	return cp
}
