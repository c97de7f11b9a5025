package syncer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/model/podstate"
	"github.com/podhost/podhost/internal/model/records"
	"github.com/podhost/podhost/internal/model/wellknown"
)

// SyncTerminatingPod stops every container of the pod in parallel, each with
// the grace period (which the pod workers only ever shrink). running is the
// pod cache's view after the worker's previous sync; a stop already in
// flight (a liveness kill) is joined, not repeated. The last status is that
// of a stopped pod (updateStoppedStatus), as the kubelet's.
func (s *Syncer) SyncTerminatingPod(ctx context.Context, pod *corev1.Pod, running *podstate.Pod, grace int64) error {
	s.prober.StopLivenessAndStartup(pod.UID)
	var err error
	if running == nil {
		if running, err = s.runtimePod(ctx, pod.UID); err != nil {
			return err
		}
	}
	if err := s.stopPodContainers(ctx, pod, running.Running(), time.Duration(grace)*time.Second); err != nil {
		return err
	}
	if running, err = s.runtimePod(ctx, pod.UID); err != nil {
		return err
	}
	if n := len(running.Running()); n > 0 {
		return fmt.Errorf("pod %s/%s: %d containers still running after their stop", pod.Namespace, pod.Name, n)
	}
	s.updateStoppedStatus(pod, running)
	s.prober.Forget(pod.UID)
	return nil
}

// SyncTerminatingRuntimePod stops and removes a pod the runtime has but
// nobody wants any more (no manifest): podhost restarted after its manifest
// was deleted, or its worker is long gone. Each container keeps the grace
// period it was created with.
func (s *Syncer) SyncTerminatingRuntimePod(ctx context.Context, running *podstate.Pod) error {
	if running == nil {
		return nil
	}
	running, err := s.runtimePod(ctx, running.UID) // the housekeeping list may be old
	if err != nil {
		return err
	}
	var grace time.Duration
	for _, c := range running.Containers {
		if g, err := strconv.Atoi(c.Labels[wellknown.LabelGracePeriod]); err == nil && time.Duration(g)*time.Second > grace {
			grace = time.Duration(g) * time.Second
		}
	}
	if err := s.stopContainers(ctx, nil, running.Running(), grace); err != nil {
		return err
	}
	return s.cleanupPod(ctx, running.UID, true)
}

// SyncTerminatedPod releases what a terminated pod still holds: network,
// namespaces, cgroup. A pod that is still desired (it Succeeded or Failed
// with its manifest present) keeps its exited containers for status and
// logs, unless it was evicted; otherwise everything goes, containers and
// volumes included. Before
// the first manifest snapshot no pod is known to be deleted (a termination
// resumed at start may be that of a finished pod the manifests still
// want): it keeps them too, and if it turns out deleted, housekeeping
// finds its containers orphaned and removes them.
func (s *Syncer) SyncTerminatedPod(ctx context.Context, pod *corev1.Pod) error {
	running, err := s.runtimePod(ctx, pod.UID)
	if err != nil {
		return err
	}
	if len(running.Running()) > 0 {
		return fmt.Errorf("pod %s/%s still has running containers", pod.Namespace, pod.Name)
	}
	desired := s.obs.IsDesired(pod.UID) || !s.obs.SourcesReady()
	if desired {
		s.updateStoppedStatus(pod, running)
	}
	// An evicted pod's content goes as a deleted pod's (the kubelet's
	// ShouldPodContentBeRemoved): what it used is reclaimed, its status
	// stays.
	return s.cleanupPod(ctx, pod.UID, !desired || s.isEvicted(pod))
}

// cleanupPod tears down every sandbox of uid, its cgroup and (removeAll)
// its containers, volumes and logs. Idempotent; runs under a fresh context.
func (s *Syncer) cleanupPod(ctx context.Context, uid types.UID, removeAll bool) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	start := time.Now()
	defer func() {
		s.log.Debug("pod cleanup done", "podUID", string(uid), "all", removeAll, "took", time.Since(start))
	}()
	var errs []error
	recs, err := s.store.PodSandboxes(uid)
	if err != nil {
		return err
	}
	for _, r := range recs {
		if err := s.teardownSandbox(ctx, r); err != nil {
			errs = append(errs, err)
		}
	}
	if removeAll {
		s.forgetEvicted(uid)
		more, err := s.removePodContents(ctx, uid)
		if err != nil {
			return err
		}
		errs = append(errs, more...)
		// Its sandboxes are gone and every container with them: the
		// pod's user namespace range is free (the kubelet's Release).
		if len(errs) == 0 && s.userns != nil {
			if err := s.userns.Release(uid); err != nil {
				errs = append(errs, err)
			} else if i := slices.IndexFunc(recs, func(r records.SandboxRecord) bool { return r.UserNS != nil }); i >= 0 {
				s.log.Info("user namespace range released", "podUID", string(uid), "hostID", recs[i].UserNS.HostID)
			}
		}
	}
	if err := s.removePodCgroups(ctx, uid); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// removePodContents removes what a deleted pod leaves besides its sandbox
// and cgroup: containers, volumes and logs (once every container is gone;
// see podlogs.go). Its state.db records (allocation, status, events,
// worker) are not the syncer's to purge: the manager's housekeeping purges
// them once the pod is neither listed nor active, on the goroutine that
// admits pods; purged here, they raced a re-apply of the same UID, whose
// new allocation checkpoint, status and events went with the old pod's
// (and, after a restart, the pod counted as never admitted). The error
// stops the cleanup; errs do not. A
// removal the state db cannot record (a full disk) still happens: removing
// the containers frees disk, only the removal's crash safety is lost.
func (s *Syncer) removePodContents(ctx context.Context, uid types.UID) (errs []error, err error) {
	if err := s.recordLogRemoval(uid); err != nil {
		s.log.Warn("removing the pod's logs without a record", "podUID", string(uid), "err", err)
	}
	running, err := s.runtimePod(ctx, uid)
	if err != nil {
		return nil, err
	}
	for _, c := range running.Containers {
		if err := s.removeContainer(ctx, c.ID); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 {
		s.removeDeletedLogs(ctx, uid)
	}
	if err := s.vol.Cleanup(ctx, uid); err != nil {
		errs = append(errs, err)
	}
	s.forget(uid)
	return errs, nil
}

// stopContainers stops containers in parallel, each with grace.
func (s *Syncer) stopContainers(ctx context.Context, pod *corev1.Pod, cs []*podstate.Container, grace time.Duration) error {
	return eachInParallel(cs, func(c *podstate.Container) error {
		return s.stopContainer(ctx, pod, c, grace, "Stopping container "+c.Name)
	})
}

// eachInParallel runs stop for every container in its own goroutine and
// returns once all have returned, with their errors naming the container.
func eachInParallel(cs []*podstate.Container, stop func(*podstate.Container) error) error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for _, c := range cs {
		wg.Add(1)
		go func(c *podstate.Container) {
			defer wg.Done()
			if err := stop(c); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("stop %s: %w", c.Name, err))
				mu.Unlock()
			}
		}(c)
	}
	wg.Wait()
	return errors.Join(errs...)
}

// stopContainer stops one container with grace, once: a stop of the same
// container already in flight is joined (see stopper). The Killing event
// (message msg) is recorded by the call that starts the stop; its preStop
// hook runs inside the stop op, so once per stop, within grace (runPreStop).
func (s *Syncer) stopContainer(ctx context.Context, pod *corev1.Pod, c *podstate.Container, grace time.Duration, msg string) error {
	return s.stopContainerInTurn(ctx, pod, c, grace, msg, nil)
}

// stopContainerInTurn is stopContainer waiting, between the preStop hook
// and the stop signal, for the container's turn (the kubelet's
// killContainer): wait, given what is left of grace after the hook (not
// called when nothing is), returns how long it waited. The signal gets
// what is left after both, at least minStopGrace.
func (s *Syncer) stopContainerInTurn(ctx context.Context, pod *corev1.Pod, c *podstate.Container, grace time.Duration, msg string, wait func(ctx context.Context, left time.Duration) time.Duration) error {
	return s.stops.stop(ctx, c.ID, grace, func(ctx context.Context) error {
		if pod != nil {
			s.obs.Event(pod.UID, corev1.EventTypeNormal, "Killing", msg)
		}
		left := s.runPreStop(ctx, pod, c, grace)
		if wait != nil && left > 0 {
			left -= wait(ctx, left)
		}
		return s.rt.StopContainer(ctx, c.ID, max(left, minStopGrace))
	})
}

// CleanupSandboxRecord tears down a sandbox nobody owns any more (found by
// housekeeping: a record left behind by a crash). Exported for the manager.
func (s *Syncer) CleanupSandboxRecord(ctx context.Context, rec records.SandboxRecord) error {
	return s.teardownSandbox(ctx, rec)
}

// removePodCgroups removes every cgroup of uid (whatever QoS class it was
// made for), found by listing rather than from records, so nothing leaks
// even when a record was lost.
func (s *Syncer) removePodCgroups(ctx context.Context, uid types.UID) error {
	pcs, err := s.cg.ListPods(ctx)
	if err != nil {
		return fmt.Errorf("list pod cgroups: %w", err)
	}
	var errs []error
	for _, pc := range pcs {
		if pc.UID == uid {
			if err := s.cg.RemovePod(ctx, pc); err != nil {
				errs = append(errs, fmt.Errorf("remove pod cgroup %s: %w", pc.Name, err))
			}
		}
	}
	return errors.Join(errs...)
}

// CleanupLeaks removes pod cgroups, volume dirs and recorded log removals
// of pods that are not active (not desired, no worker, nothing in the
// runtime): what a crash between two cleanup steps can leave behind.
func (s *Syncer) CleanupLeaks(ctx context.Context, active func(types.UID) bool) error {
	var errs []error
	pcs, err := s.cg.ListPods(ctx)
	if err != nil {
		errs = append(errs, err)
	}
	for _, pc := range pcs {
		if pc.UID != "" && !active(pc.UID) {
			s.log.Info("removing leaked pod cgroup", "cgroup", pc.Name, "podUID", string(pc.UID))
			if err := s.cg.RemovePod(ctx, pc); err != nil {
				errs = append(errs, err)
			}
		}
	}
	uids, err := s.vol.ListPods()
	if err != nil {
		errs = append(errs, err)
	}
	for _, uid := range uids {
		if !active(uid) {
			s.log.Info("removing leaked pod volumes", "podUID", string(uid))
			if err := s.vol.Cleanup(ctx, uid); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if err := s.finishLogRemovals(ctx, active); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// removeContainer removes a container (task, container, snapshot) and
// forgets its stop.
func (s *Syncer) removeContainer(ctx context.Context, id string) error {
	err := s.rt.RemoveContainer(ctx, id)
	if err == nil {
		s.stops.forget(id)
	}
	return err
}
