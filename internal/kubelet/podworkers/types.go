package podworkers

import (
	"context"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/podhost/podhost/internal/model/podstate"
	"github.com/podhost/podhost/internal/model/records"
)

// UpdateType says why a pod is being synced (kubelet's SyncPodType).
type UpdateType int

const (
	// SyncPodSync: periodic resync, retry after an error, or Wake.
	SyncPodSync UpdateType = iota
	// SyncPodUpdate: the desired pod changed.
	SyncPodUpdate
	// SyncPodCreate: the pod was first seen.
	SyncPodCreate
	// SyncPodKill: stop the pod; sticky — the worker never syncs it again.
	SyncPodKill
)

func (t UpdateType) String() string {
	switch t {
	case SyncPodSync:
		return "sync"
	case SyncPodUpdate:
		return "update"
	case SyncPodCreate:
		return "create"
	case SyncPodKill:
		return "kill"
	}
	return "unknown"
}

// PodWorkerState is the phase of a pod worker. It only moves forward:
// SyncPod → TerminatingPod → TerminatedPod.
type PodWorkerState int

const (
	// SyncPod: the pod should be running; SyncPod is called.
	SyncPod PodWorkerState = iota
	// TerminatingPod: termination was requested; SyncTerminatingPod (or
	// SyncTerminatingRuntimePod) is called until it succeeds.
	TerminatingPod
	// TerminatedPod: no container runs; SyncTerminatedPod is called until it
	// succeeds, after which the worker is finished.
	TerminatedPod
)

func (s PodWorkerState) String() string {
	switch s {
	case SyncPod:
		return "sync"
	case TerminatingPod:
		return "terminating"
	case TerminatedPod:
		return "terminated"
	}
	return "unknown"
}

// persistedPhase maps a worker state onto records.WorkerRecord.Phase.
func (s PodWorkerState) persistedPhase() string {
	switch s {
	case TerminatingPod:
		return records.PhaseTerminating
	case TerminatedPod:
		return records.PhaseTerminated
	}
	return records.PhaseSyncing
}

// WorkerState is what SyncKnownPods reports for one known worker (kubelet's
// PodWorkerSync).
type WorkerState struct {
	State PodWorkerState
	// Orphan: the pod is not in the desired set given to SyncKnownPods.
	Orphan bool
	// HasConfig: the worker has a desired *corev1.Pod; false for a runtime-only
	// worker (an orphan runtime pod being torn down from RunningPod alone).
	HasConfig bool
	// Finished: SyncTerminatedPod (or SyncTerminatingRuntimePod) completed.
	Finished bool
}

// SyncHandler does the actual work for one pod; podworkers calls it from the
// pod's goroutine, never concurrently for the same UID. Every method must be
// idempotent: it is retried after errors and re-run after daemon restarts.
// Methods must return promptly once ctx is cancelled (a kill or a shorter
// grace period cancels the in-flight call; the worker then calls again).
type SyncHandler interface {
	// SyncPod makes the runtime match pod. Result.Terminal means the pod
	// reached a terminal phase (all containers done under its restart
	// policy): the worker moves to terminating. Result.RequeueAfter asks for
	// the next sync after that long (a back-off that expires), sooner than the
	// periodic resync; the worker's timer, on its clock, runs it.
	SyncPod(ctx context.Context, t UpdateType, pod *corev1.Pod, running *podstate.Pod) (SyncResult, error)
	// SyncTerminatingPod stops every container of pod within gracePeriod
	// seconds (always >= 1). Success means nothing of the pod runs anymore.
	SyncTerminatingPod(ctx context.Context, pod *corev1.Pod, running *podstate.Pod, gracePeriod int64) error
	// SyncTerminatingRuntimePod stops containers of a pod that has no desired
	// spec (an orphan found in the runtime). Success ends the worker.
	SyncTerminatingRuntimePod(ctx context.Context, running *podstate.Pod) error
	// SyncTerminatedPod releases what a stopped pod still holds (sandbox,
	// network, cgroup, allocation). Retried until it succeeds.
	SyncTerminatedPod(ctx context.Context, pod *corev1.Pod) error
}

// SyncResult is what a successful SyncPod tells its worker.
type SyncResult struct {
	Terminal     bool
	RequeueAfter time.Duration // 0: the periodic resync
	// Settled: the runtime cache holds what the sync left (it changed
	// nothing, or it listed the pod again after its changes). The next
	// sync then takes state observed since this one began, not since it
	// ended: the start a sync causes (its PLEG event) and the periodic
	// resync are answered from the cache instead of a new list.
	Settled bool
}

// Store persists worker phases (state.DB satisfies it). Called from the pod's
// goroutine before the work of a new phase starts ("record intent first"),
// and DeleteWorker when SyncKnownPods forgets a finished worker.
type Store interface {
	PutWorker(records.WorkerRecord) error
	DeleteWorker(uid types.UID) error
}

// RuntimeCache supplies the observed runtime state passed as `running` to
// SyncPod and SyncTerminatingPod (kubelet: podCache.GetNewerThan). It should
// return state observed no earlier than notBefore (the end of the worker's
// previous sync, or its start when it reported Settled), listing the pod
// if needed. nil result = nothing in the runtime.
type RuntimeCache interface {
	GetNewerThan(ctx context.Context, uid types.UID, notBefore time.Time) (*podstate.Pod, error)
}

// Options configure PodWorkers; zero values take the defaults.
type Options struct {
	// ResyncInterval: a pod whose last SyncPod succeeded is synced again after
	// this long (±10% jitter). Default 60s.
	ResyncInterval time.Duration
	// BackoffBase, BackoffMax: a failed sync is retried after BackoffBase,
	// doubling per consecutive failure up to BackoffMax, ±25% jitter.
	// Defaults 1s and 30s.
	BackoffBase, BackoffMax time.Duration
	// Store, when set, persists phases (see Store).
	Store Store
	// Cache, when set, provides `running` for each sync. Without it, running
	// is the RunningPod of the latest UpdatePodOptions (may be nil).
	Cache  RuntimeCache
	Clock  clock.Clock  // default: the real clock (tests: k8s.io/utils/clock/testing)
	Logger *slog.Logger // default: slog.Default()
	// OnFinished, when set, is called (from the worker's goroutine, no
	// lock held) once a worker finished: SyncTerminatedPod or
	// SyncTerminatingRuntimePod succeeded.
	OnFinished func(uid types.UID)
}

// UpdatePodOptions is one request to the pod's worker.
//
// Exactly one of Pod or RunningPod identifies the pod: Pod for a desired pod
// (RunningPod may then accompany it as the observed runtime state, used when
// Options.Cache is nil); RunningPod alone (with Type SyncPodKill) for a pod
// found in the runtime with no desired spec, which is torn down with
// SyncTerminatingRuntimePod.
//
// Restoring after a restart: UpdatePod{Type: SyncPodKill, Pod: <pod from the
// WorkerRecord>, GracePeriodOverride: &record.GracePeriod} seeds a worker
// directly into the terminating phase with that grace period.
type UpdatePodOptions struct {
	Type       UpdateType
	Pod        *corev1.Pod
	RunningPod *podstate.Pod
	// GracePeriodOverride shortens the termination grace period (seconds);
	// the effective grace period only ever shrinks, and is at least 1.
	GracePeriodOverride *int64
}
