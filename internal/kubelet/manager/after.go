package manager

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/desired/manifest"
	"github.com/podhost/podhost/internal/desired/order"
	"github.com/podhost/podhost/internal/desired/podset"
	"github.com/podhost/podhost/internal/kubelet/podworkers"
)

// ReasonWaitingForDependencies is the status reason of a pod held back by
// its podhost.io/after annotation.
const ReasonWaitingForDependencies = "WaitingForDependencies"

// killPollPeriod is how often deferred kills are checked while some wait.
const killPollPeriod = 100 * time.Millisecond

// waitingPod is a pod whose podhost.io/after pods are not all Ready: it is
// neither admitted nor started yet.
type waitingPod struct {
	pod      *corev1.Pod
	since    time.Time
	notReady []string
}

// pendingKill is a removed pod whose kill waits for the removed pods that
// depend on it to finish terminating.
type pendingKill struct {
	pod     *corev1.Pod
	waitFor []types.UID
}

// holds are the pods the podhost.io/after order holds back: new pods
// waiting for their dependencies to be Ready, and removed pods whose kill
// waits for their dependants. It owns its lock (taken after Manager.mu
// when both are held) and calls out only to dueKills' terminated.
type holds struct {
	mu      sync.Mutex
	waiting map[types.UID]*waitingPod
	kills   map[types.UID]*pendingKill
}

func newHolds() *holds {
	return &holds{waiting: map[types.UID]*waitingPod{}, kills: map[types.UID]*pendingKill{}}
}

// hold makes pod wait, from since.
func (h *holds) hold(pod *corev1.Pod, since time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.waiting[pod.UID] = &waitingPod{pod: pod, since: since}
}

// waitingPods are copies of the waiting pods, by full name.
func (h *holds) waitingPods() []waitingPod {
	h.mu.Lock()
	out := make([]waitingPod, 0, len(h.waiting))
	for _, w := range h.waiting {
		out = append(out, *w)
	}
	h.mu.Unlock()
	slices.SortFunc(out, func(a, b waitingPod) int {
		return cmp.Compare(manifest.FullName(a.pod), manifest.FullName(b.pod))
	})
	return out
}

// setNotReady records what uid still waits for.
func (h *holds) setNotReady(uid types.UID, notReady []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if w := h.waiting[uid]; w != nil {
		w.notReady = notReady
	}
}

// update replaces a waiting pod by its new version (same UID).
func (h *holds) update(pod *corev1.Pod) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if w := h.waiting[pod.UID]; w != nil {
		w.pod = pod
	}
}

// release ends uid's wait; false if it was not waiting.
func (h *holds) release(uid types.UID) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, ok := h.waiting[uid]
	delete(h.waiting, uid)
	return ok
}

// isWaiting reports whether uid waits.
func (h *holds) isWaiting(uid types.UID) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.waiting[uid] != nil
}

// entries are the waiting pods as the API shows them, with the status
// computed here.
func (h *holds) entries() []PodEntry {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]PodEntry, 0, len(h.waiting))
	for _, w := range h.waiting {
		st := waitingStatus(w)
		out = append(out, PodEntry{Pod: w.pod, Status: &st})
	}
	return out
}

// pending reports whether pods wait, and whether kills are deferred.
func (h *holds) pending() (waiting, kills bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.waiting) > 0, len(h.kills) > 0
}

// deferKill defers pod's kill until the pods waitFor finished terminating.
func (h *holds) deferKill(pod *corev1.Pod, waitFor []types.UID) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.kills[pod.UID] = &pendingKill{pod: pod, waitFor: waitFor}
}

// cancelKill drops uid's deferred kill; false if there was none.
func (h *holds) cancelKill(uid types.UID) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, ok := h.kills[uid]
	delete(h.kills, uid)
	return ok
}

// dueKills takes the deferred kills whose dependants all finished
// terminating: none is deferred still or taken in this pass (its kill is
// about to be sent: it has not terminated), and terminated says each is
// done.
func (h *holds) dueKills(terminated func(types.UID) bool) []*corev1.Pod {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []*corev1.Pod
	taken := map[types.UID]bool{}
	for uid, pk := range h.kills {
		done := true
		for _, d := range pk.waitFor {
			if _, deferred := h.kills[d]; deferred || taken[d] || !terminated(d) {
				done = false
				break
			}
		}
		if done {
			delete(h.kills, uid)
			taken[uid] = true
			out = append(out, pk.pod)
		}
	}
	return out
}

// deferredKills are the removed pods whose kill waits.
func (h *holds) deferredKills() []*corev1.Pod {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]*corev1.Pod, 0, len(h.kills))
	for _, pk := range h.kills {
		out = append(out, pk.pod)
	}
	return out
}

// holdIfWaiting keeps a new pod with a podhost.io/after annotation back
// until its dependencies are Ready. Pods admitted before a restart ran
// already: they never wait.
func (m *Manager) holdIfWaiting(pod *corev1.Pod, wasAdmitted bool) bool {
	if wasAdmitted || !order.HasAfter(pod) {
		return false
	}
	m.holds.hold(pod, time.Now())
	m.log.Info("pod waits for its dependencies", "pod", manifest.FullName(pod), "after", order.After(pod))
	return true
}

// releaseWaiting admits and starts every waiting pod whose dependencies
// are all Ready now, and records what the others still wait for.
func (m *Manager) releaseWaiting(ctx context.Context) {
	for _, w := range m.holds.waitingPods() {
		notReady := m.notReady(w.pod)
		if len(notReady) > 0 {
			m.holds.setNotReady(w.pod.UID, notReady)
			continue
		}
		if !m.holds.release(w.pod.UID) {
			continue // removed meanwhile
		}
		m.log.Info("dependencies Ready; starting pod", "pod", manifest.FullName(w.pod), "waited", time.Since(w.since).Round(time.Millisecond))
		m.purgeStale([]*corev1.Pod{w.pod})
		if m.admit(w.pod, false) {
			m.startPods(ctx, []*corev1.Pod{w.pod})
		}
	}
}

// notReady lists the podhost.io/after pods of pod that are not Ready
// ("name (not found)" for a pod not in the desired set).
func (m *Manager) notReady(pod *corev1.Pod) []string {
	m.mu.RLock()
	byName := make(map[string]*corev1.Pod, len(m.desired))
	for _, p := range m.desired {
		byName[manifest.FullName(p)] = p
	}
	m.mu.RUnlock()
	var out []string
	for _, name := range order.After(pod) {
		dep := byName[pod.Namespace+"/"+name]
		switch {
		case dep == nil:
			out = append(out, name+" (not found)")
		case !m.isReady(dep.UID):
			out = append(out, name)
		}
	}
	return out
}

func (m *Manager) isReady(uid types.UID) bool {
	st, ok := m.statuses.Status(uid)
	if !ok {
		return false
	}
	for _, c := range st.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// waitingStatus is the status shown for a waiting pod.
func waitingStatus(w *waitingPod) corev1.PodStatus {
	notReady := w.notReady
	if notReady == nil {
		notReady = order.After(w.pod)
	}
	msg := "waiting for pods to be Ready: " + strings.Join(notReady, ", ")
	since := metav1.NewTime(w.since)
	return corev1.PodStatus{
		Phase: corev1.PodPending, Reason: ReasonWaitingForDependencies, Message: msg,
		Conditions: []corev1.PodCondition{{
			Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: since,
			Reason: ReasonWaitingForDependencies, Message: msg,
		}},
	}
}

// removePods removes a batch of pods. A removed pod that other removed pods
// depend on (podhost.io/after) is killed only once those finished
// terminating (processPendingKills), unless a pod of the same name is
// added in the batch (its successor must not start next to it).
func (m *Manager) removePods(updates []podset.Update) {
	var removed []*corev1.Pod
	adding := map[string]bool{}
	for _, u := range updates {
		switch u.Op {
		case podset.REMOVE:
			removed = append(removed, m.graces.apply(u.Pod))
		case podset.ADD:
			adding[manifest.FullName(u.Pod)] = true
		}
	}
	killed := map[string]types.UID{} // full name → UID, of pods whose kill was sent or deferred
	for _, level := range order.StopLevels(removed) {
		for _, p := range level {
			if !m.forget(p) {
				continue
			}
			killed[manifest.FullName(p)] = p.UID
			var waitFor []types.UID
			for _, d := range removed {
				if uid, ok := killed[manifest.FullName(d)]; ok && slices.Contains(order.After(d), p.Name) && d.Namespace == p.Namespace {
					waitFor = append(waitFor, uid)
				}
			}
			if len(waitFor) == 0 || adding[manifest.FullName(p)] {
				m.kill(p)
				continue
			}
			m.log.Info("pod terminates after its dependants", "pod", manifest.FullName(p), "dependants", len(waitFor))
			m.holds.deferKill(p, waitFor)
		}
	}
}

// cancelPendingKills drops the deferred kills of pods added again (a
// static pod applied again keeps its UID): their workers never stopped, so
// their run goes on, where the kill would have stopped a pod that is
// wanted, for good (a finished worker of a listed pod is not restarted).
func (m *Manager) cancelPendingKills(added []*corev1.Pod) {
	for _, p := range added {
		if m.holds.cancelKill(p.UID) {
			m.log.Info("pod applied again: its deferred kill is dropped", "pod", manifest.FullName(p), "podUID", string(p.UID))
		}
	}
}

// processPendingKills sends the deferred kills whose dependants finished
// terminating (or whose workers are gone: terminated and forgotten).
func (m *Manager) processPendingKills() {
	terminated := func(uid types.UID) bool {
		return m.workers.IsPodKnownTerminated(uid) || !m.workers.IsPodTerminationRequested(uid)
	}
	for _, p := range m.holds.dueKills(terminated) {
		m.kill(p)
	}
}

func (m *Manager) kill(pod *corev1.Pod) {
	m.workers.UpdatePod(podworkers.UpdatePodOptions{Type: podworkers.SyncPodKill, Pod: pod})
}

// orderPending reports what the loop must watch: status changes (pods
// waiting for Ready dependencies) and deferred kills.
func (m *Manager) orderPending() (waiting, kills bool) { return m.holds.pending() }

// deferredKills are the removed pods whose kill waits: housekeeping keeps
// their workers running (SyncKnownPods would kill them as orphans).
func (m *Manager) deferredKills() []*corev1.Pod { return m.holds.deferredKills() }
