package manager

import (
	"context"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/desired/manifest"
	"github.com/podhost/podhost/internal/desired/podset"
	"github.com/podhost/podhost/internal/desired/source"
	"github.com/podhost/podhost/internal/kubelet/admission"
	"github.com/podhost/podhost/internal/kubelet/pleg"
	"github.com/podhost/podhost/internal/kubelet/podworkers"
	"github.com/podhost/podhost/internal/model/podstate"
)

// Inputs are the channels the sync loop reads.
type Inputs struct {
	Snapshots    <-chan source.Snapshot // desired pods (manifest source)
	Events       <-chan pleg.PodEvent   // container lifecycle (PLEG)
	ProbeUpdates <-chan types.UID       // probe result changes (prober)
	// ImagesAdded: images arrived (the images directory): every desired
	// pod is woken, so one waiting for an image syncs again at once.
	ImagesAdded <-chan struct{}
	// PrevAdmitted: pods admitted before a restart (allocation checkpoints).
	PrevAdmitted map[types.UID]bool
	Housekeeping time.Duration
	// Heartbeat, if set, is told about every iteration (systemd watchdog).
	Heartbeat Heartbeat
}

// Heartbeat records that the sync loop made progress (watchdog.Heartbeat).
type Heartbeat interface{ Beat() }

// Run is the sync loop (the kubelet's syncLoopIteration). It returns when
// ctx is done.
func (m *Manager) Run(ctx context.Context, in Inputs) {
	tick := time.NewTicker(in.Housekeeping)
	defer tick.Stop()
	killPoll := time.NewTicker(killPollPeriod)
	defer killPoll.Stop()
	for {
		if in.Heartbeat != nil {
			in.Heartbeat.Beat()
		}
		// Only while pods wait (podhost.io/after) does the loop follow
		// status changes and poll deferred kills.
		var statusChanged <-chan struct{}
		var killTick <-chan time.Time
		if waiting, kills := m.orderPending(); waiting || kills {
			statusChanged, killTick = m.statuses.Changed(), killPoll.C
		}
		select {
		case <-ctx.Done():
			return
		case snap := <-in.Snapshots:
			m.pace.changed(time.Now())
			m.applySnapshot(ctx, snap, in.PrevAdmitted)
			m.changes.notify()
		case ev := <-in.Events:
			m.pace.changed(time.Now())
			if m.IsDesired(ev.UID) {
				m.workers.Wake(ev.UID)
			}
		case uid := <-in.ProbeUpdates:
			m.workers.Wake(uid)
		case <-in.ImagesAdded:
			m.wakeDesired()
		case <-statusChanged:
			m.releaseWaiting(ctx)
		case <-killTick:
			m.processPendingKills()
			m.releaseWaiting(ctx)
		case <-tick.C:
			m.housekeeping(ctx)
		}
	}
}

// applySnapshot turns a manifest snapshot into pod updates. Before the
// first one, runtime pods that nobody wants any more are killed first.
func (m *Manager) applySnapshot(ctx context.Context, snap source.Snapshot, prevAdmitted map[types.UID]bool) {
	m.mu.RLock()
	first := !m.started
	m.mu.RUnlock()
	var rpods []*podstate.Pod
	var listErr error
	if first {
		rpods, listErr = m.rt.ListPods(ctx)
		if listErr != nil {
			m.log.Warn("list runtime pods before the first sync", "err", listErr)
		}
	}
	snap.Pods = m.resolveIdentities(snap.Pods, first, prevAdmitted, rpods)
	m.cfgMu.Lock()
	updates := m.cfg.Apply(snap)
	m.cfgMu.Unlock()
	if first {
		m.alloc.Load()
		if listErr == nil {
			m.killOrphans(updates, rpods)
		}
	} else {
		// Only the first snapshot after a start prefers what was admitted
		// before it (podhost's, decisions.md 9: the kubelet at startup
		// admits every pod again, oldest creationTimestamp first): a pod
		// removed and added again later is admitted like any newcomer.
		prevAdmitted = nil
	}
	changed := m.replaceData(snap)
	m.handleUpdates(ctx, updates, prevAdmitted)
	m.indexAndWake(updates, changed)
	if first {
		m.mu.Lock()
		m.started = true
		uids := make([]types.UID, 0, len(m.desired)+len(m.rejected))
		for uid := range m.desired {
			uids = append(uids, uid)
		}
		for uid := range m.rejected {
			uids = append(uids, uid)
		}
		m.mu.Unlock()
		m.statuses.ExpectSynced(uids)
	}
}

// killOrphans sends a kill for every runtime pod that the first snapshot
// does not add and no worker is terminating: pods whose manifest was
// removed or edited while podhost was down. Sent before the snapshot's pods
// start, such a kill takes the pod's full name first, so an edited pod's old
// version terminates before its new version starts, as with a live edit.
// (Housekeeping would find them too, but only after the new versions had
// started next to them.)
func (m *Manager) killOrphans(updates []podset.Update, rpods []*podstate.Pod) {
	added := map[types.UID]bool{}
	for _, u := range updates {
		if u.Op == podset.ADD {
			added[u.Pod.UID] = true
		}
	}
	for _, rp := range rpods {
		if added[rp.UID] || m.workers.IsPodTerminationRequested(rp.UID) {
			continue
		}
		m.log.Info("terminating orphaned runtime pod", "pod", rp.FullName(), "podUID", string(rp.UID))
		m.workers.UpdatePod(podworkers.UpdatePodOptions{Type: podworkers.SyncPodKill, RunningPod: rp})
	}
}

// handleUpdates applies one batch: removals first (so a replaced pod's ports
// and resources are free for its successor), then pods admitted before a
// restart (their allocation checkpoint wins over newcomers), then the rest.
func (m *Manager) handleUpdates(ctx context.Context, updates []podset.Update, prevAdmitted map[types.UID]bool) {
	m.removePods(updates)
	sort.SliceStable(updates, func(i, j int) bool {
		return prevAdmitted[updates[i].Pod.UID] && !prevAdmitted[updates[j].Pod.UID]
	})
	fresh := newlyAdded(updates, prevAdmitted)
	m.cancelPendingKills(fresh)
	m.purgeStale(fresh)
	var added []*corev1.Pod
	for _, u := range updates {
		if u.Op == podset.ADD && !m.holdIfWaiting(u.Pod, prevAdmitted[u.Pod.UID]) && m.admit(u.Pod, prevAdmitted[u.Pod.UID]) {
			added = append(added, u.Pod)
		}
	}
	m.startPods(ctx, added)
	for _, u := range updates {
		switch u.Op {
		case podset.UPDATE:
			m.mu.Lock()
			_, ok := m.desired[u.Pod.UID]
			if ok {
				m.desired[u.Pod.UID] = u.Pod
			}
			_, rejected := m.rejected[u.Pod.UID]
			m.mu.Unlock()
			m.holds.update(u.Pod)
			if rejected {
				m.readmit(ctx, u.Pod)
			}
			if ok {
				m.workers.UpdatePod(podworkers.UpdatePodOptions{Type: podworkers.SyncPodUpdate, Pod: m.alloc.Allocate(u.Pod)})
			}
		}
	}
	m.releaseWaiting(ctx)
}

// purgeStale purges the records (status, events, allocation, worker
// record) an earlier run with the same UID left of pods about to be
// admitted that this podhost did not admit before its start and that have
// no worker left unfinished: a static pod keeps its UID, and one deleted
// and applied again before housekeeping purged it (or with podhost stopped
// in between) would start with the old run's phase — a finished
// restartPolicy Never pod shown Succeeded while it runs again, left out of
// admission's active pods — its start time (activeDeadlineSeconds counted
// from it) and its events. A pod whose worker has not finished (still
// running under a deferred kill, or terminating) goes on with its run and
// keeps them. Handled for ADDs (handleUpdates) and again when a pod held
// for its podhost.io/after dependencies is released (its old worker may
// have finished meanwhile).
func (m *Manager) purgeStale(pods []*corev1.Pod) {
	var recorded map[types.UID]bool
	for _, p := range pods {
		if st, ok := m.workers.State(p.UID); ok && !st.Finished {
			continue
		}
		if recorded == nil { // read once a batch, only if a pod may need it
			var err error
			if recorded, err = m.store.RecordedPods(); err != nil {
				m.log.Warn("list recorded pods", "err", err)
				return
			}
		}
		if !recorded[p.UID] {
			continue
		}
		m.log.Info("purging the records of an earlier run", "pod", manifest.FullName(p), "podUID", string(p.UID))
		if err := m.store.PurgePod(p.UID); err != nil {
			m.log.Warn("purge records of an earlier run", "podUID", string(p.UID), "err", err)
		}
	}
}

// newlyAdded are the pods ADDed in updates that this podhost did not admit
// before its start.
func newlyAdded(updates []podset.Update, prevAdmitted map[types.UID]bool) []*corev1.Pod {
	var out []*corev1.Pod
	for _, u := range updates {
		if u.Op == podset.ADD && !prevAdmitted[u.Pod.UID] {
			out = append(out, u.Pod)
		}
	}
	return out
}

// admit runs admission (skipped for pods admitted before a restart) and
// makes an admitted pod desired; a rejected one is Failed with the reason.
func (m *Manager) admit(pod *corev1.Pod, wasAdmitted bool) bool {
	if !wasAdmitted {
		node := admission.Node{Name: m.nodeName, Labels: m.nodeLabels, Allocatable: m.allocatable, AppArmor: m.appArmor}
		res := admission.Result{Admit: true}
		if m.admitFirst != nil {
			res = m.admitFirst.Admit(pod)
		}
		if res.Admit {
			res = node.Admit(pod, m.activePods())
		}
		if !res.Admit {
			m.log.Warn("pod rejected", "pod", manifest.FullName(pod), "podUID", string(pod.UID), "reason", res.Reason, "message", res.Message)
			m.mu.Lock()
			m.rejected[pod.UID] = pod
			m.statuses.RejectPod(pod, res.Reason, res.Message) // under m.mu: see WorkerFinished
			m.mu.Unlock()
			return false
		}
	}
	m.mu.Lock()
	m.statuses.AddPod(pod)      // under m.mu: see WorkerFinished
	delete(m.rejected, pod.UID) // a re-admitted pod moves in one step: Pods() always lists it
	m.desired[pod.UID] = pod
	m.mu.Unlock()
	return true
}

// readmit runs admission again for an update of a rejected pod (an edit
// of its resources or labels keeps its UID): with the kubelet every edit of
// a static pod is a new pod, admitted anew. Admitted, it starts as an added
// pod would (its Failed status is replaced); rejected again, its status
// shows the new reason.
func (m *Manager) readmit(ctx context.Context, pod *corev1.Pod) {
	if m.admit(pod, false) {
		m.startPods(ctx, []*corev1.Pod{pod})
	}
}

// startPods checkpoints the allocations of newly admitted pods (one
// transaction for the batch) and updates the QoS cgroups with them
// (qoscgroups.go) before their workers start.
func (m *Manager) startPods(ctx context.Context, pods []*corev1.Pod) {
	if len(pods) == 0 {
		return
	}
	m.alloc.CheckpointNew(pods)
	run := make([]*corev1.Pod, len(pods))
	for i, p := range pods {
		run[i] = m.alloc.Allocate(p)
	}
	m.updateQOSCgroups(ctx)
	for i, p := range pods {
		m.log.Info("pod added", "pod", manifest.FullName(p), "podUID", string(p.UID))
		m.workers.UpdatePod(podworkers.UpdatePodOptions{Type: podworkers.SyncPodCreate, Pod: run[i]})
	}
}

// forget drops a removed pod from the desired set; it reports whether the
// pod was desired (its worker must be killed, see removePods).
func (m *Manager) forget(pod *corev1.Pod) bool {
	wasWaiting := m.holds.release(pod.UID)
	m.mu.Lock()
	_, wasDesired := m.desired[pod.UID]
	delete(m.desired, pod.UID)
	delete(m.rejected, pod.UID)
	if wasDesired {
		// In the same critical section: the API never misses the pod.
		m.terminating.add(pod, time.Now())
	}
	m.mu.Unlock()
	if wasWaiting {
		m.log.Info("pod removed", "pod", manifest.FullName(pod), "podUID", string(pod.UID))
		return false
	}
	if wasDesired {
		m.statuses.MarkTerminating(pod.UID) // RemovePod once the worker finished (terminating.go)
	} else {
		m.statuses.RemovePod(pod.UID)
	}
	m.alloc.Remove(pod.UID)
	m.log.Info("pod removed", "pod", manifest.FullName(pod), "podUID", string(pod.UID))
	if !wasDesired {
		_ = m.store.PurgePod(pod.UID)
	}
	return wasDesired
}

func (m *Manager) admittedPods() []*corev1.Pod {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]*corev1.Pod, 0, len(m.desired))
	for _, p := range m.desired {
		out = append(out, m.alloc.WorkerPod(p)) // a resize not allocated counts as allocated
	}
	return out
}

// activePods are the admitted pods that still hold resources and host ports,
// as the kubelet's filterOutInactivePods: a pod whose worker finished
// terminating, or that reached Succeeded/Failed and is not being stopped,
// does not count against admission.
func (m *Manager) activePods() []*corev1.Pod {
	pods := m.admittedPods()
	out := make([]*corev1.Pod, 0, len(pods))
	for _, p := range pods {
		if m.workers.IsPodKnownTerminated(p.UID) {
			continue
		}
		if st, ok := m.statuses.Status(p.UID); ok && isTerminalPhase(st.Phase) && !m.workers.IsPodTerminationRequested(p.UID) {
			continue
		}
		out = append(out, p)
	}
	return out
}

func isTerminalPhase(p corev1.PodPhase) bool {
	return p == corev1.PodSucceeded || p == corev1.PodFailed
}

// wakeDesired wakes the worker of every desired pod.
func (m *Manager) wakeDesired() {
	m.mu.RLock()
	uids := make([]types.UID, 0, len(m.desired))
	for uid := range m.desired {
		uids = append(uids, uid)
	}
	m.mu.RUnlock()
	for _, uid := range uids {
		m.workers.Wake(uid)
	}
}
