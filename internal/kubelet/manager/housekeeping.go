package manager

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/kubelet/podworkers"
	"github.com/podhost/podhost/internal/model/records"
)

// housekeeping is the HandlePodCleanups analog: purge finished workers of
// pods nobody wants and restart forgotten ones (every pass, in memory);
// when a full pass is due (pace.go), also terminate runtime pods nobody
// wants (our labels, no desired pod, no worker), and tear down sandbox
// records and other leaks nobody owns.
//
// Like the kubelet's (HandlePodCleanups is skipped until sourcesReady), it
// does nothing before the first snapshot is applied: until then no pod is
// desired, and every running pod would look orphaned (a manifest URL that
// answers slowly at start delays the first snapshot by up to its timeout).
func (m *Manager) housekeeping(ctx context.Context) {
	if !m.SourcesReady() {
		m.log.Debug("housekeeping skipped: manifest sources not ready yet")
		return
	}
	desired := m.admittedPods()
	known := m.workers.SyncKnownPods(append(m.deferredKills(), desired...))
	m.dropFinished(known)
	now := time.Now()
	for _, p := range desired {
		if _, ok := known[p.UID]; !ok {
			// The worker was forgotten (a restart was requested while it
			// terminated): start it again, as the kubelet's HandlePodCleanups does.
			m.workers.UpdatePod(podworkers.UpdatePodOptions{Type: podworkers.SyncPodCreate, Pod: p})
			m.pace.changed(now)
		}
	}
	m.retryDeferredResizes()
	m.pace.observeWorkers(known, now)
	if m.pace.fullDue(now) {
		m.updateQOSCgroups(ctx) // pods gone, finished or resized
		m.fullHousekeeping(ctx, known)
	}
}

// fullHousekeeping looks for orphaned runtime pods, leaked sandboxes,
// cgroups, volumes, logs and containerd leases and snapshots.
func (m *Manager) fullHousekeeping(ctx context.Context, known map[types.UID]podworkers.WorkerState) {
	rpods, err := m.rt.ListPods(ctx)
	if err != nil {
		m.log.Warn("housekeeping: list runtime pods", "err", err)
		m.pace.fullAt(time.Now()) // retried at the next pass, not in a minute
		return
	}
	inRuntime := map[types.UID]bool{}
	for _, rp := range rpods {
		inRuntime[rp.UID] = true
		if m.IsDesired(rp.UID) {
			continue
		}
		if _, ok := known[rp.UID]; ok {
			continue
		}
		m.log.Info("terminating orphaned runtime pod", "pod", rp.FullName(), "podUID", string(rp.UID))
		m.workers.UpdatePod(podworkers.UpdatePodOptions{Type: podworkers.SyncPodKill, RunningPod: rp})
	}
	recs, err := m.store.ListSandboxes()
	if err != nil {
		m.log.Warn("housekeeping: list sandboxes", "err", err)
		m.pace.fullAt(time.Now())
		return
	}
	sandboxOf := map[types.UID]bool{}
	for _, r := range recs {
		sandboxOf[r.PodUID] = true
	}
	active := func(uid types.UID) bool {
		_, hasWorker := known[uid]
		return m.IsDesired(uid) || hasWorker || inRuntime[uid] || sandboxOf[uid]
	}
	if err := m.cleaner.CleanupLeaks(ctx, active); err != nil {
		m.log.Warn("housekeeping: leaks", "err", err)
	}
	m.purgeGoneRecords(active)
	m.collectLogs(ctx, active)
	if err := m.rt.CollectGarbage(ctx); err != nil {
		m.log.Warn("housekeeping: containerd leases and snapshots", "err", err)
	}
	stale := staleSandboxes(recs, m.IsDesired, known, inRuntime)
	for _, rec := range stale {
		m.log.Info("removing leaked sandbox", "sandbox", rec.ID, "pod", rec.FullName)
		if err := m.cleaner.CleanupSandboxRecord(ctx, rec); err != nil {
			m.log.Warn("remove leaked sandbox", "sandbox", rec.ID, "err", err)
		}
	}
	if len(stale) > 0 {
		// The pod's cgroups, volumes and logs counted as active in this
		// pass because of the record: the next pass is a full one too.
		m.pace.fullAt(time.Now())
	}
}

// purgeGoneRecords drops what state.db keeps of pods that are gone: no
// manifest (desired, rejected or waiting), no worker, nothing in the
// runtime, no sandbox record: a deleted pod once its worker finished, and
// pods that had none to finish (removed while podhost was down with
// nothing left running), whose status, events and allocation would
// otherwise stay in the file for good. It is the only purge of a deleted
// pod's records: it runs on the loop goroutine, which also admits pods, so
// a pod applied again with the same UID is listed before it looks (the
// syncer's cleanup purged too, and deleted a re-applied pod's new
// allocation checkpoint, status and events).
func (m *Manager) purgeGoneRecords(active func(types.UID) bool) {
	uids, err := m.store.RecordedPods()
	if err != nil {
		m.log.Warn("housekeeping: list recorded pods", "err", err)
		return
	}
	for uid := range uids {
		if active(uid) || m.listed(uid) {
			continue
		}
		m.log.Info("purging the records of a gone pod", "podUID", string(uid))
		if err := m.store.PurgePod(uid); err != nil {
			m.log.Warn("purge records of a gone pod", "podUID", string(uid), "err", err)
		}
	}
}

// listed: uid is a pod of the manifests, admitted or not.
func (m *Manager) listed(uid types.UID) bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.desired[uid] != nil || m.rejected[uid] != nil || m.holds.isWaiting(uid)
}

// logGCPeriod spaces log GC passes: a scan of the log dir every
// housekeeping pass (2 s) would be wasted work.
const logGCPeriod = 10 * time.Second

// collectLogs runs log GC at most every logGCPeriod, with housekeeping's
// view of which pods still exist: a pod's logs go only after its cleanup
// (which removes a deleted pod's itself: log GC is the backstop). A pass
// it skips asks for a full pass once the period is over (leftover logs go
// within logGCPeriod, not at the next idle full pass).
func (m *Manager) collectLogs(ctx context.Context, active func(types.UID) bool) {
	if m.logs == nil {
		return
	}
	if !m.pace.logGCDue(time.Now()) {
		return
	}
	if err := m.logs.Collect(ctx, active); err != nil {
		m.log.Warn("housekeeping: log GC", "err", err)
	}
}

// staleSandboxes picks the records nobody will clean up otherwise: those of
// pods that are neither desired, nor known to a worker, nor in the runtime;
// and superseded records (not the newest) of desired pods.
func staleSandboxes(recs []records.SandboxRecord, desired func(types.UID) bool, known map[types.UID]podworkers.WorkerState, inRuntime map[types.UID]bool) []records.SandboxRecord {
	newest := map[types.UID]records.SandboxRecord{}
	for _, r := range recs {
		if cur, ok := newest[r.PodUID]; !ok || r.CreatedAt.After(cur.CreatedAt) {
			newest[r.PodUID] = r
		}
	}
	var out []records.SandboxRecord
	for _, r := range recs {
		_, hasWorker := known[r.PodUID]
		switch {
		case desired(r.PodUID):
			if newest[r.PodUID].ID != r.ID {
				out = append(out, r)
			}
		case !hasWorker && !inRuntime[r.PodUID]:
			out = append(out, r)
		}
	}
	return out
}

// retryDeferredResizes tries Deferred resizes again: another pod may have
// freed resources.
func (m *Manager) retryDeferredResizes() {
	for _, uid := range m.alloc.Deferred() {
		m.mu.RLock()
		p := m.desired[uid]
		m.mu.RUnlock()
		if p == nil {
			continue
		}
		if wp := m.alloc.Allocate(p); wp == p {
			m.workers.UpdatePod(podworkers.UpdatePodOptions{Type: podworkers.SyncPodUpdate, Pod: wp})
		}
	}
}
