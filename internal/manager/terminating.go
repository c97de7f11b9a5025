package manager

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/manifest"
	"github.com/podhost/podhost/internal/podworkers"
)

// A removed pod stays in the API while it stops, as a deleted pod does on
// a cluster: with a deletionTimestamp (get shows Terminating, describe
// `Terminating (lasts …)`) and the status it had, until its worker
// finished (containers stopped, sandbox, cgroup and volumes gone: the
// kubelet's podResourcesAreReclaimed before the final delete). A pod of
// the same name that replaces it (a changed manifest) hides it: the API
// shows one pod per name.

// noteTerminating keeps pod, just removed from the desired set, for the
// API until its worker finished. Called before its status is dropped.
func (m *Manager) noteTerminating(pod *corev1.Pod, now time.Time) {
	cp := pod.DeepCopy()
	ts := metav1.NewTime(now)
	grace := int64(corev1.DefaultTerminationGracePeriodSeconds)
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		grace = *pod.Spec.TerminationGracePeriodSeconds
	}
	cp.DeletionTimestamp, cp.DeletionGracePeriodSeconds = &ts, &grace
	st, ok := m.statuses.Status(pod.UID)
	if !ok {
		st = corev1.PodStatus{Phase: corev1.PodPending}
	}
	m.mu.Lock()
	m.terminating[pod.UID] = PodEntry{Pod: cp, Status: &st}
	m.mu.Unlock()
}

// terminatingEntries are the kept pods whose name no listed pod has;
// m.mu read-locked by the caller. The caller drops those whose worker
// finished (unfinished), outside the lock.
func (m *Manager) terminatingEntries(listed map[string]bool) []PodEntry {
	var out []PodEntry
	for uid, e := range m.terminating {
		if !listed[manifest.FullName(e.Pod)] && m.desired[uid] == nil {
			out = append(out, e)
		}
	}
	return out
}

// unfinished keeps the entries whose worker has not finished.
func (m *Manager) unfinished(entries []PodEntry) []PodEntry {
	out := entries[:0]
	for _, e := range entries {
		if ws, ok := m.workers.State(e.Pod.UID); ok && !ws.Finished {
			out = append(out, e)
		}
	}
	return out
}

// dropFinished forgets the kept pods whose worker finished or is gone
// (housekeeping, with SyncKnownPods' answer).
func (m *Manager) dropFinished(known map[types.UID]podworkers.WorkerState) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for uid := range m.terminating {
		if ws, ok := known[uid]; !ok || ws.Finished || m.desired[uid] != nil {
			delete(m.terminating, uid)
		}
	}
}
