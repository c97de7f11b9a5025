package manager

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/desired/manifest"
	"github.com/podhost/podhost/internal/kubelet/podworkers"
)

// A removed pod stays in the API while it stops, as a deleted pod does on
// a cluster: with a deletionTimestamp (get shows Terminating, describe
// `Terminating (lasts …)`) and its live status (the status manager keeps
// tracking it, not desired), until its worker finished (containers
// stopped, sandbox, cgroup and volumes gone: the kubelet's
// podResourcesAreReclaimed before the final delete). The API shows one pod
// per name: a pod of the same name that replaces it hides it, and of two
// removed ones the later.

// deleting is the API's copy of pod, removed at now.
func deleting(pod *corev1.Pod, now time.Time) *corev1.Pod {
	cp := pod.DeepCopy()
	ts := metav1.NewTime(now)
	grace := int64(corev1.DefaultTerminationGracePeriodSeconds)
	switch {
	case pod.DeletionGracePeriodSeconds != nil: // a delete's (graces)
		grace = *pod.DeletionGracePeriodSeconds
	case pod.Spec.TerminationGracePeriodSeconds != nil:
		grace = *pod.Spec.TerminationGracePeriodSeconds
	}
	cp.DeletionTimestamp, cp.DeletionGracePeriodSeconds = &ts, &grace
	return cp
}

// RestoreTerminating shows pod, whose termination a previous podhost began
// (since then) and this one resumes, until its worker finished.
func (m *Manager) RestoreTerminating(pod *corev1.Pod, since time.Time) {
	m.statuses.AddPod(pod)
	m.statuses.MarkTerminating(pod.UID)
	m.mu.Lock()
	m.terminating[pod.UID] = PodEntry{Pod: deleting(pod, since)}
	m.mu.Unlock()
}

// WorkerFinished is the pod workers' news that uid's worker finished: a
// removed pod leaves the API now (its status goes, which wakes watches).
// Under m.mu, as admit's AddPod and RejectPod: a pod applied again in
// between keeps its fresh status.
func (m *Manager) WorkerFinished(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, kept := m.terminating[uid]; kept {
		m.endTerminatingLocked(uid)
		m.changes.notify()
	}
}

// endTerminatingLocked forgets the kept pod uid and, unless the pod is
// listed again with a status of the status manager's, its status. m.mu
// held.
func (m *Manager) endTerminatingLocked(uid types.UID) {
	delete(m.terminating, uid)
	if !m.trackedLocked(uid) {
		m.statuses.RemovePod(uid)
	}
}

// trackedLocked: uid's status is the status manager's (admitted or
// rejected; a waiting pod's is computed here). m.mu held.
func (m *Manager) trackedLocked(uid types.UID) bool {
	return m.desired[uid] != nil || m.rejected[uid] != nil
}

// terminatingEntries are the kept pods whose name no listed pod has;
// m.mu read-locked by the caller, which drops those whose worker finished
// (shownTerminating), outside the lock.
func (m *Manager) terminatingEntries(listed map[string]bool) []PodEntry {
	var out []PodEntry
	for uid, e := range m.terminating {
		if !listed[manifest.FullName(e.Pod)] && m.desired[uid] == nil {
			out = append(out, e)
		}
	}
	return out
}

// shownTerminating keeps the entries whose worker has not finished, the
// latest removed of each name.
func (m *Manager) shownTerminating(entries []PodEntry) []PodEntry {
	byName := map[string]PodEntry{}
	for _, e := range entries {
		if ws, ok := m.workers.State(e.Pod.UID); !ok || ws.Finished {
			continue
		}
		name := manifest.FullName(e.Pod)
		if prev, ok := byName[name]; !ok || prev.Pod.DeletionTimestamp.Before(e.Pod.DeletionTimestamp) {
			byName[name] = e
		}
	}
	out := make([]PodEntry, 0, len(byName))
	for _, e := range byName {
		out = append(out, e)
	}
	return out
}

// dropFinished forgets the kept pods whose worker finished or is gone, in
// case WorkerFinished did not (housekeeping, with SyncKnownPods' answer).
func (m *Manager) dropFinished(known map[types.UID]podworkers.WorkerState) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for uid := range m.terminating {
		if ws, ok := known[uid]; !ok || ws.Finished || m.desired[uid] != nil {
			m.endTerminatingLocked(uid)
		}
	}
}
