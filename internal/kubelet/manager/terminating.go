package manager

import (
	"maps"
	"slices"
	"sync"
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

// terminatingView is the removed pods the API shows until their worker
// finished, each the API's copy (deleting). It owns its lock; a caller
// that moves a pod between the desired set and it holds Manager.mu
// around both (lock order: Manager.mu, then the view's), so the API never
// misses the pod.
type terminatingView struct {
	mu   sync.Mutex
	pods map[types.UID]PodEntry
}

func newTerminatingView() *terminatingView {
	return &terminatingView{pods: map[types.UID]PodEntry{}}
}

// add shows pod as removed at since.
func (v *terminatingView) add(pod *corev1.Pod, since time.Time) {
	shown := deleting(pod, since)
	v.mu.Lock()
	defer v.mu.Unlock()
	v.pods[pod.UID] = PodEntry{Pod: shown}
}

// remove forgets uid; false if it was not shown.
func (v *terminatingView) remove(uid types.UID) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	_, ok := v.pods[uid]
	delete(v.pods, uid)
	return ok
}

// has reports whether uid is shown.
func (v *terminatingView) has(uid types.UID) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	_, ok := v.pods[uid]
	return ok
}

// uids are the pods shown.
func (v *terminatingView) uids() []types.UID {
	v.mu.Lock()
	defer v.mu.Unlock()
	return slices.Collect(maps.Keys(v.pods))
}

// entries are the pods shown but those hidden says to leave out.
func (v *terminatingView) entries(hidden func(uid types.UID, e PodEntry) bool) []PodEntry {
	v.mu.Lock()
	defer v.mu.Unlock()
	var out []PodEntry
	for uid, e := range v.pods {
		if !hidden(uid, e) {
			out = append(out, e)
		}
	}
	return out
}

// RestoreTerminating shows pod, whose termination a previous podhost began
// (since then) and this one resumes, until its worker finished.
func (m *Manager) RestoreTerminating(pod *corev1.Pod, since time.Time) {
	m.statuses.AddPod(pod)
	m.statuses.MarkTerminating(pod.UID)
	m.terminating.add(pod, since)
}

// WorkerFinished is the pod workers' news that uid's worker finished: a
// removed pod leaves the API now (its status goes, which wakes watches).
// Under m.mu, as admit's AddPod and RejectPod: a pod applied again in
// between keeps its fresh status.
func (m *Manager) WorkerFinished(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.terminating.remove(uid) {
		if !m.trackedLocked(uid) {
			m.statuses.RemovePod(uid)
		}
		m.changes.notify()
	}
}

// endTerminatingLocked forgets the shown pod uid and, unless the pod is
// listed again with a status of the status manager's, its status. m.mu
// held.
func (m *Manager) endTerminatingLocked(uid types.UID) {
	if m.terminating.remove(uid) && !m.trackedLocked(uid) {
		m.statuses.RemovePod(uid)
	}
}

// trackedLocked: uid's status is the status manager's (admitted or
// rejected; a waiting pod's is computed here). m.mu held.
func (m *Manager) trackedLocked(uid types.UID) bool {
	return m.desired[uid] != nil || m.rejected[uid] != nil
}

// terminatingEntries are the shown removed pods whose name no listed pod
// has; m.mu read-locked by the caller, which drops those whose worker
// finished (shownTerminating), outside the lock.
func (m *Manager) terminatingEntries(listed []PodEntry) []PodEntry {
	names := make(map[string]bool, len(listed))
	for _, e := range listed {
		names[manifest.FullName(e.Pod)] = true
	}
	return m.terminating.entries(func(uid types.UID, e PodEntry) bool {
		return names[manifest.FullName(e.Pod)] || m.desired[uid] != nil
	})
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

// dropFinished forgets the shown pods whose worker finished or is gone, in
// case WorkerFinished did not (housekeeping, with SyncKnownPods' answer).
func (m *Manager) dropFinished(known map[types.UID]podworkers.WorkerState) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, uid := range m.terminating.uids() {
		if ws, ok := known[uid]; !ok || ws.Finished || m.desired[uid] != nil {
			m.endTerminatingLocked(uid)
		}
	}
}
