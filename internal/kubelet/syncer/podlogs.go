package syncer

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"

	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/logs"
	"github.com/podhost/podhost/internal/model/podstate"
)

// PodLogs removes the log directories of deleted pods (logs.Remover).
type PodLogs interface {
	// RemovePod removes pod uid's logs, except those of the containers
	// keep names; nothing while a log driver still writes there (the
	// error wraps logs.ErrDriverWriting). removed counts the directories
	// it removed.
	RemovePod(ctx context.Context, uid types.UID, keep map[string]bool) (removed int, err error)
	// RemovePods removes the whole logs of each pod of uids, with one look
	// for running log drivers.
	RemovePods(ctx context.Context, uids []types.UID) map[types.UID]logs.Removal
}

// noPodLogs removes nothing (Deps.PodLogs nil: tests).
type noPodLogs struct{}

func (noPodLogs) RemovePod(context.Context, types.UID, map[string]bool) (int, error) { return 0, nil }
func (noPodLogs) RemovePods(context.Context, []types.UID) map[types.UID]logs.Removal { return nil }

// logRemovals mirrors the store's log removal records (state.db
// logremovals): the deleted pods whose log directories are still to be
// removed.
//
// A deleted pod's logs go with its containers, as the kubelet's
// removeContainerLog removes a container's when it removes the container:
// cleanupPod records the removal before the first container goes and
// removes the directory once every one is gone (the shim stops a task's
// log driver when the task is deleted), so a pod applied again with the
// same UID never writes into the old run's files (its worker starts once
// the old one finished). A podhost that dies in between finishes the
// removal: at the pod's next SyncPod, before any container starts
// (adoptLogs), or in housekeeping once it is gone for good
// (finishLogRemovals). logs/gc removes what is left without a record.
//
// Once a deleted pod's containers are gone, its log removal never fails
// the cleanup: a log driver that does not exit (or a directory that cannot
// be removed) would hold the pod's worker, and with it the pod's name, for
// good — a replacement (an edited manifest: new UID, same name) would never
// start. The record stays, a warning says so once, and housekeeping
// retries (finishLogRemovals); a pod applied again with the same UID waits
// for the removal in adoptLogs.
type logRemovals struct {
	mu      sync.Mutex
	pending map[types.UID]bool // nil until loaded from the store
	warned  map[types.UID]bool // removals left to housekeeping, warned about
}

// recordLogRemoval records, before a deleted pod's containers are removed,
// that its logs must go. The store is written outside the lock: every
// SyncPod asks logRemovalPending, and one pod's removal steps are never
// concurrent (its worker; housekeeping only for pods without one). Records
// that cannot be read do not keep it from writing its own. One the store
// cannot take (a full disk) is still noted in the mirror: this podhost
// retries a removal that has to wait and guards a same-UID restart; only
// the crash safety is lost.
func (s *Syncer) recordLogRemoval(uid types.UID) error {
	if pending, err := s.logRemovalPending(uid); err == nil && pending {
		return nil
	}
	err := s.store.PutLogRemoval(uid)
	s.setLogRemoval(uid, true)
	if err != nil {
		return fmt.Errorf("record the log removal of pod %s: %w", uid, err)
	}
	return nil
}

// removeLogs removes uid's logs, but those of the containers in keep, and
// drops the record (dropLogRemoval).
func (s *Syncer) removeLogs(ctx context.Context, uid types.UID, keep map[string]bool) error {
	removed, err := s.podLogs.RemovePod(ctx, uid, keep)
	if err != nil {
		return err
	}
	s.dropLogRemoval(uid, removed, len(keep))
	return nil
}

// dropLogRemoval drops the record of uid's log removal once the logs are
// gone (removed directories). A record the store cannot delete (a full
// disk) fails nothing: the mirror forgets it, so this podhost does not
// remove the pod's logs again; a later one finds the record and removes
// what the pod's containers then do not keep.
func (s *Syncer) dropLogRemoval(uid types.UID, removed, kept int) {
	if err := s.store.DeleteLogRemoval(uid); err != nil {
		s.log.Warn("the logs of a deleted pod are removed, but not the record of their removal", "podUID", string(uid), "err", err)
	}
	s.setLogRemoval(uid, false)
	if removed > 0 {
		s.log.Info("removed the logs of a deleted pod", "podUID", string(uid), "containersKept", kept)
	}
}

// removeDeletedLogs removes the logs of a deleted pod whose containers are
// all gone; what it cannot remove is left to housekeeping (logRemovals).
func (s *Syncer) removeDeletedLogs(ctx context.Context, uid types.UID) {
	if err := s.removeLogs(ctx, uid, nil); err != nil {
		s.warnLogsLeft(uid, err)
	}
}

// warnLogsLeft warns, once per pod, that its logs stay for a later
// housekeeping pass.
func (s *Syncer) warnLogsLeft(uid types.UID, err error) {
	s.removals.mu.Lock()
	first := !s.removals.warned[uid]
	if first {
		if s.removals.warned == nil {
			s.removals.warned = map[types.UID]bool{}
		}
		s.removals.warned[uid] = true
	}
	s.removals.mu.Unlock()
	if first {
		s.log.Warn("the logs of a deleted pod stay until housekeeping can remove them", "podUID", string(uid), "err", err)
	}
}

// logRemovalPending: a removal of uid's logs is recorded.
func (s *Syncer) logRemovalPending(uid types.UID) (bool, error) {
	s.removals.mu.Lock()
	defer s.removals.mu.Unlock()
	if err := s.loadLogRemovalsLocked(); err != nil {
		return false, err
	}
	return s.removals.pending[uid], nil
}

// setLogRemoval notes in the mirror what the store holds now; a mirror
// not loaded yet (the records could not be read) reads it from the store.
func (s *Syncer) setLogRemoval(uid types.UID, pending bool) {
	s.removals.mu.Lock()
	defer s.removals.mu.Unlock()
	if pending && s.removals.pending == nil {
		return
	}
	if pending {
		s.removals.pending[uid] = true
	} else {
		delete(s.removals.pending, uid)
		delete(s.removals.warned, uid)
	}
}

// pendingLogRemovals lists the recorded removals, by UID.
func (s *Syncer) pendingLogRemovals() ([]types.UID, error) {
	s.removals.mu.Lock()
	defer s.removals.mu.Unlock()
	if err := s.loadLogRemovalsLocked(); err != nil {
		return nil, err
	}
	out := make([]types.UID, 0, len(s.removals.pending))
	for uid := range s.removals.pending {
		out = append(out, uid)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out, nil
}

func (s *Syncer) loadLogRemovalsLocked() error {
	if s.removals.pending != nil {
		return nil
	}
	uids, err := s.store.ListLogRemovals()
	if err != nil {
		return fmt.Errorf("list log removals: %w", err)
	}
	s.removals.pending = make(map[types.UID]bool, len(uids))
	for _, uid := range uids {
		s.removals.pending[uid] = true
	}
	return nil
}

// adoptLogs finishes, before SyncPod starts any container, a log removal
// that a podhost which died during the pod's cleanup left behind: the pod
// was deleted and is wanted again with the same UID. The logs of the
// containers it still has stay with them (their next instances write new
// files); the others go, or a new instance would write into the old run's
// <restart>.log.
//
// Records that cannot be read do not hold the pod: a pod that appends to
// an old run's log (what podhost did before log removals were recorded) is
// better than one that never starts, and every pod would wait for them.
func (s *Syncer) adoptLogs(ctx context.Context, uid types.UID, running *podstate.Pod) error {
	pending, err := s.logRemovalPending(uid)
	if err != nil {
		s.log.Warn("starting the pod without knowing whether old logs of its UID are to be removed", "podUID", string(uid), "err", err)
		return nil
	}
	if !pending {
		return nil
	}
	return s.removeLogs(ctx, uid, keptContainers(running))
}

// keptContainers names the containers running has (any state).
func keptContainers(running *podstate.Pod) map[string]bool {
	keep := map[string]bool{}
	if running == nil {
		return keep
	}
	for _, c := range running.Containers {
		keep[c.Name] = true
	}
	return keep
}

// finishLogRemovals removes the logs of the recorded pods that are gone
// (not active): a podhost died between such a pod's container removal and
// its log removal, or a log driver still wrote there then. One look for
// running log drivers serves them all (it runs on the sync loop's
// goroutine, in every full housekeeping pass).
func (s *Syncer) finishLogRemovals(ctx context.Context, active func(types.UID) bool) error {
	pending, err := s.pendingLogRemovals()
	if err != nil {
		return err
	}
	gone := pending[:0]
	for _, uid := range pending {
		if !active(uid) {
			gone = append(gone, uid)
		}
	}
	if len(gone) == 0 {
		return nil
	}
	res := s.podLogs.RemovePods(ctx, gone)
	var errs []error
	for _, uid := range gone {
		switch err := res[uid].Err; {
		case errors.Is(err, logs.ErrDriverWriting):
			s.warnLogsLeft(uid, err) // retried at the next pass, without a warning every pass
		case err != nil:
			errs = append(errs, err)
		default:
			s.dropLogRemoval(uid, res[uid].Removed, 0)
		}
	}
	return errors.Join(errs...)
}
