package podworkers

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// SyncKnownPods reconciles the workers with the desired pods (kubelet's
// SyncKnownPods, called from housekeeping) and returns the state of every
// worker it keeps.
//
//   - A finished worker whose pod is not desired is forgotten (not returned;
//     its WorkerRecord is deleted from the Store). So is a finished worker
//     whose UID got a Create while terminating (restart requested): the
//     caller must then send SyncPodCreate again for it.
//   - A worker whose pod is not desired is marked deleted (see
//     ShouldPodContentBeRemoved) and, if still syncing, asked to terminate
//     (podhost addition: a missed REMOVE cannot leave a pod running).
//   - After the first call, UIDs without a worker are known not to run (see
//     CouldHaveRunningContainers and friends).
func (p *PodWorkers) SyncKnownPods(desired []*corev1.Pod) map[types.UID]WorkerState {
	known := make(map[types.UID]bool, len(desired))
	for _, pod := range desired {
		known[pod.UID] = true
	}
	p.mu.Lock()
	p.podsSynced = true
	out := make(map[types.UID]WorkerState, len(p.statuses))
	var purged []*podSyncStatus
	for uid, s := range p.statuses {
		orphan := !known[uid]
		if orphan && !s.finished {
			s.deleted = true
			if !s.IsTerminationRequested() && !p.stopped {
				p.updateLocked(UpdatePodOptions{Type: SyncPodKill, Pod: s.latestPod()})
			}
		}
		if s.finished && (orphan || s.restartRequested) {
			p.forget(s)
			purged = append(purged, s)
			continue
		}
		out[uid] = WorkerState{State: s.WorkType(), Orphan: orphan, HasConfig: s.latestPod() != nil, Finished: s.finished}
	}
	done := p.markDeleting(purged)
	p.mu.Unlock()
	p.deleteRecords(purged, done)
	return out
}

// forget drops a finished worker's history. p.mu held.
func (p *PodWorkers) forget(s *podSyncStatus) {
	if s.restartRequested {
		s.log.Debug("pod terminated and re-created with the same UID; forgetting the old worker")
	} else {
		s.log.Debug("pod terminated and no longer desired; forgetting the worker")
	}
	delete(p.statuses, s.uid)
	// A UID created again (a rollback, a file restored) starts a new
	// worker whose first sync takes any cached state as fresh: drop the
	// finished pod's last observation (*podcache.Cache).
	if c, ok := p.opts.Cache.(interface{ Delete(types.UID) }); ok {
		c.Delete(s.uid)
	}
	p.wakeWaiters(p.names.remove(s.fullName, s.uid))
}

// markDeleting registers the Store deletions about to run so that a new
// worker for the same UID persists only after them. p.mu held.
func (p *PodWorkers) markDeleting(purged []*podSyncStatus) chan struct{} {
	if p.opts.Store == nil || len(purged) == 0 {
		return nil
	}
	done := make(chan struct{})
	for _, s := range purged {
		if !s.runtimeOnly {
			p.deleting[s.uid] = done
		}
	}
	return done
}

// deleteRecords removes the purged workers' records, without p.mu.
func (p *PodWorkers) deleteRecords(purged []*podSyncStatus, done chan struct{}) {
	if done == nil {
		return
	}
	for _, s := range purged {
		if s.runtimeOnly {
			continue
		}
		if err := p.opts.Store.DeleteWorker(s.uid); err != nil {
			s.log.Error("delete worker record", "err", err)
		}
	}
	p.mu.Lock()
	for _, s := range purged {
		if p.deleting[s.uid] == done {
			delete(p.deleting, s.uid)
		}
	}
	p.mu.Unlock()
	close(done)
}

// query applies f to the status of uid under the lock, or unknown when
// there is none.
func (p *PodWorkers) query(uid types.UID, f func(*podSyncStatus) bool, unknown func(podsSynced bool) bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if s, ok := p.statuses[uid]; ok {
		return f(s)
	}
	return unknown(p.podsSynced)
}

func always(v bool) func(bool) bool { return func(bool) bool { return v } }
func synced(b bool) bool            { return b }
func notSynced(b bool) bool         { return !b }

// IsPodTerminationRequested: termination was requested (the pod may still
// be stopping). Unknown pods: false.
func (p *PodWorkers) IsPodTerminationRequested(uid types.UID) bool {
	return p.query(uid, (*podSyncStatus).IsTerminationRequested, always(false))
}

// IsPodKnownTerminated: SyncTerminatingPod succeeded (no container runs).
// Unknown pods: false.
func (p *PodWorkers) IsPodKnownTerminated(uid types.UID) bool {
	return p.query(uid, (*podSyncStatus).IsTerminated, always(false))
}

// CouldHaveRunningContainers: the pod is not known to be terminated. Unknown
// pods: true until SyncKnownPods first ran, false after.
func (p *PodWorkers) CouldHaveRunningContainers(uid types.UID) bool {
	return p.query(uid, func(s *podSyncStatus) bool { return !s.IsTerminated() }, notSynced)
}

// ShouldPodContainersBeTerminating: the worker observed the termination
// request, so no SyncPod will run again. Unknown pods: true once synced.
func (p *PodWorkers) ShouldPodContainersBeTerminating(uid types.UID) bool {
	return p.query(uid, func(s *podSyncStatus) bool { return s.startedTerminating }, synced)
}

// ShouldPodRuntimeBeRemoved: the pod is terminated; its runtime objects
// (containers, sandbox) may be removed. Unknown pods: true once synced.
func (p *PodWorkers) ShouldPodRuntimeBeRemoved(uid types.UID) bool {
	return p.query(uid, (*podSyncStatus).IsTerminated, synced)
}

// ShouldPodContentBeRemoved: the pod is terminated and deleted (not desired
// any more, or runtime-only); its on-disk content (logs, volumes) may go.
// Unknown pods: true once synced.
func (p *PodWorkers) ShouldPodContentBeRemoved(uid types.UID) bool {
	return p.query(uid, func(s *podSyncStatus) bool { return s.deleted && s.IsTerminated() }, synced)
}

// ShouldPodBeFinished: SyncTerminatedPod succeeded. Unknown pods: true once
// synced.
func (p *PodWorkers) ShouldPodBeFinished(uid types.UID) bool {
	return p.query(uid, (*podSyncStatus).IsFinished, synced)
}

// State returns the worker state of uid, false when no worker is known.
func (p *PodWorkers) State(uid types.UID) (WorkerState, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s, ok := p.statuses[uid]
	if !ok {
		return WorkerState{}, false
	}
	return WorkerState{State: s.WorkType(), HasConfig: s.latestPod() != nil, Finished: s.finished}, true
}
