package manager

import (
	"cmp"
	"context"
	"slices"
	"strings"
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
// neither admitted nor started yet (loop goroutine writes, m.mu guards).
type waitingPod struct {
	pod      *corev1.Pod
	since    time.Time
	notReady []string
}

// pendingKill is a removed pod whose kill waits for the removed pods that
// depend on it to finish terminating (loop goroutine only).
type pendingKill struct {
	pod     *corev1.Pod
	waitFor []types.UID
}

// holdIfWaiting keeps a new pod with a podhost.io/after annotation back
// until its dependencies are Ready. Pods admitted before a restart ran
// already: they never wait.
func (m *Manager) holdIfWaiting(pod *corev1.Pod, wasAdmitted bool) bool {
	if wasAdmitted || !order.HasAfter(pod) {
		return false
	}
	m.mu.Lock()
	m.waiting[pod.UID] = &waitingPod{pod: pod, since: time.Now()}
	m.mu.Unlock()
	m.log.Info("pod waits for its dependencies", "pod", manifest.FullName(pod), "after", order.After(pod))
	return true
}

// releaseWaiting admits and starts every waiting pod whose dependencies
// are all Ready now, and records what the others still wait for.
func (m *Manager) releaseWaiting(ctx context.Context) {
	m.mu.RLock()
	waiting := make([]*waitingPod, 0, len(m.waiting))
	for _, w := range m.waiting {
		waiting = append(waiting, w)
	}
	m.mu.RUnlock()
	slices.SortFunc(waiting, func(a, b *waitingPod) int {
		return cmp.Compare(manifest.FullName(a.pod), manifest.FullName(b.pod))
	})
	for _, w := range waiting {
		notReady := m.notReady(w.pod)
		m.mu.Lock()
		if len(notReady) > 0 {
			w.notReady = notReady
			m.mu.Unlock()
			continue
		}
		delete(m.waiting, w.pod.UID)
		m.mu.Unlock()
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
			m.pendingKills[p.UID] = &pendingKill{pod: p, waitFor: waitFor}
		}
	}
}

// cancelPendingKills drops the deferred kills of pods added again (a
// static pod applied again keeps its UID): their workers never stopped, so
// their run goes on, where the kill would have stopped a pod that is
// wanted, for good (a finished worker of a listed pod is not restarted).
func (m *Manager) cancelPendingKills(added []*corev1.Pod) {
	for _, p := range added {
		if _, ok := m.pendingKills[p.UID]; ok {
			m.log.Info("pod applied again: its deferred kill is dropped", "pod", manifest.FullName(p), "podUID", string(p.UID))
			delete(m.pendingKills, p.UID)
		}
	}
}

// processPendingKills sends the deferred kills whose dependants finished
// terminating (or whose workers are gone: terminated and forgotten).
func (m *Manager) processPendingKills() {
	for uid, pk := range m.pendingKills {
		done := true
		for _, d := range pk.waitFor {
			_, deferred := m.pendingKills[d]
			if deferred || !m.workers.IsPodKnownTerminated(d) && m.workers.IsPodTerminationRequested(d) {
				done = false
				break
			}
		}
		if done {
			delete(m.pendingKills, uid)
			m.kill(pk.pod)
		}
	}
}

func (m *Manager) kill(pod *corev1.Pod) {
	m.workers.UpdatePod(podworkers.UpdatePodOptions{Type: podworkers.SyncPodKill, Pod: pod})
}

// orderPending reports what the loop must watch: status changes (pods
// waiting for Ready dependencies) and deferred kills.
func (m *Manager) orderPending() (waiting, kills bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return len(m.waiting) > 0, len(m.pendingKills) > 0
}

// deferredKills are the removed pods whose kill waits: housekeeping keeps
// their workers running (SyncKnownPods would kill them as orphans).
func (m *Manager) deferredKills() []*corev1.Pod {
	out := make([]*corev1.Pod, 0, len(m.pendingKills))
	for _, pk := range m.pendingKills {
		out = append(out, pk.pod)
	}
	return out
}
