package podworkers

import (
	"context"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// podSyncStatus is everything PodWorkers knows about one UID (kubelet's
// podSyncStatus). Guarded by PodWorkers.mu, except the fields documented as
// owned by the worker goroutine.
type podSyncStatus struct {
	uid      types.UID
	fullName string
	log      *slog.Logger

	// ctx is cancelled to abort the in-flight sync (kill, shorter grace
	// period, shutdown); renewed by the worker once cancelled.
	ctx    context.Context
	cancel context.CancelFunc

	// notify wakes the worker goroutine (buffered 1); nil once it exited.
	notify chan struct{}
	// done is closed when the worker goroutine exits.
	done    chan struct{}
	pending *UpdatePodOptions // next work, merged by UpdatePod
	active  *UpdatePodOptions // last work handed to the handler (merged)

	startedAt     time.Time // first SyncPod (or first terminating work) began
	terminatingAt time.Time // termination requested
	terminatedAt  time.Time // SyncTerminatingPod succeeded
	// startedTerminating: the worker observed the termination request; no
	// SyncPod will run again.
	startedTerminating bool
	gracePeriod        int64
	// deleted: the pod is gone from the desired set (or runtime-only).
	deleted bool
	// finished: SyncTerminatedPod (or SyncTerminatingRuntimePod) succeeded.
	finished bool
	// restartRequested: a Create for this UID arrived while terminating; the
	// next SyncKnownPods forgets the finished worker so it can be re-created.
	restartRequested bool
	// runtimeOnly: created from a RunningPod with no desired pod.
	runtimeOnly bool
	// persistWait, when non-nil, is closed once a pending DeleteWorker of a
	// previous worker for this UID completed (ordering for Store).
	persistWait chan struct{}
	// failures counts consecutive failed syncs (owned by the worker goroutine).
	failures int
	// persisted is the last record written to Store (owned by the worker goroutine).
	persisted persistKey
}

// persistKey is what a WorkerRecord write depends on.
type persistKey struct {
	phase string
	grace int64
	pod   *corev1.Pod
}

func (s *podSyncStatus) IsTerminationRequested() bool { return !s.terminatingAt.IsZero() }
func (s *podSyncStatus) IsTerminated() bool           { return !s.terminatedAt.IsZero() }
func (s *podSyncStatus) IsStarted() bool              { return !s.startedAt.IsZero() }
func (s *podSyncStatus) IsFinished() bool             { return s.finished }

// WorkType is the work the next sync performs.
func (s *podSyncStatus) WorkType() PodWorkerState {
	switch {
	case s.IsTerminated():
		return TerminatedPod
	case s.IsTerminationRequested():
		return TerminatingPod
	}
	return SyncPod
}

// latestPod is the newest desired pod the worker knows, or nil.
func (s *podSyncStatus) latestPod() *corev1.Pod {
	if s.pending != nil && s.pending.Pod != nil {
		return s.pending.Pod
	}
	if s.active != nil {
		return s.active.Pod
	}
	return nil
}

// mergeActive records the work being started as the last one (kubelet's
// mergeLastUpdate): the newest Pod is kept even when a later RunningPod-only
// update arrives.
func (s *podSyncStatus) mergeActive(o UpdatePodOptions) {
	if s.active == nil {
		s.active = &UpdatePodOptions{}
	}
	if o.Pod != nil {
		s.active.Pod = o.Pod
	}
	s.active.RunningPod = o.RunningPod
	s.active.Type = o.Type
	if o.GracePeriodOverride != nil {
		s.active.GracePeriodOverride = o.GracePeriodOverride
	}
}

// defaultGracePeriod applies when neither the pod nor an override says more.
const defaultGracePeriod = corev1.DefaultTerminationGracePeriodSeconds

// effectiveGracePeriod mirrors kubelet's calculateEffectiveGracePeriod: the
// grace period only decreases; the pod's DeletionGracePeriodSeconds and the
// caller's override can lower it; the first value defaults to
// spec.terminationGracePeriodSeconds; it is never below 1.
//
// Deviation: an override (or deletion grace period) of 0 means "as fast as
// possible" = 1. kubelet's code lets a first 0 fall through to the spec
// default, which is surprising; kubelet's own callers never pass 0.
func effectiveGracePeriod(current int64, pod *corev1.Pod, override *int64) (grace int64, shortened bool) {
	grace = current
	lower := func(v int64) {
		v = max(v, 1)
		if grace == 0 || v < grace {
			grace = v
		}
	}
	if pod != nil && pod.DeletionGracePeriodSeconds != nil {
		lower(*pod.DeletionGracePeriodSeconds)
	}
	if override != nil {
		lower(*override)
	}
	if grace == 0 {
		grace = defaultGracePeriod
		if pod != nil && pod.Spec.TerminationGracePeriodSeconds != nil {
			grace = *pod.Spec.TerminationGracePeriodSeconds
		}
	}
	grace = max(grace, 1)
	return grace, current != 0 && grace != current
}
