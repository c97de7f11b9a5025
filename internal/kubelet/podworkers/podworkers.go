// Package podworkers drives each pod through kubelet's pod lifecycle with one
// goroutine per pod UID (kubelet's pkg/kubelet/pod_workers.go):
//
//	SyncPod (repeatedly) → SyncTerminatingPod (until success) → SyncTerminatedPod (until success) → finished
//
// Phases never go back. A termination request (SyncPodKill, a terminal
// SyncPod result, a pod with a deletion timestamp or a terminal status phase,
// or a RunningPod-only update for an orphan found in the runtime) cancels the
// in-flight SyncPod through its context. Updates for a busy worker are merged
// into one pending update (the latest wins; termination is sticky). Failed
// syncs retry with jittered exponential backoff; successful SyncPods are
// re-run every ResyncInterval and on Wake. Pods that share a full name
// (namespace/name) are serialized: a new UID does not start until every older
// one is finished. The package knows nothing about containerd: the
// SyncHandler does the work.
package podworkers

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// PodWorkers owns one worker per pod UID. Safe for concurrent use.
type PodWorkers struct {
	handler SyncHandler
	opts    Options
	clock   clock.Clock
	log     *slog.Logger

	// baseCtx parents every sync context; cancelled by Shutdown.
	baseCtx context.Context
	stopAll context.CancelFunc
	wg      sync.WaitGroup

	mu       sync.Mutex
	statuses map[types.UID]*podSyncStatus
	names    nameQueue
	// podsSynced: SyncKnownPods ran once, so unknown UIDs are known not to run.
	podsSynced bool
	stopped    bool
	// deleting: DeleteWorker calls in flight for purged UIDs; a new worker for
	// the same UID waits for them before its first PutWorker.
	deleting map[types.UID]chan struct{}

	// onSchedule, if set (tests), observes every armed retry/resync timer.
	onSchedule func(uid types.UID, d time.Duration)
}

// New returns PodWorkers calling h. Call Shutdown to stop it.
func New(h SyncHandler, opts Options) *PodWorkers {
	if opts.ResyncInterval <= 0 {
		opts.ResyncInterval = 60 * time.Second
	}
	if opts.BackoffBase <= 0 {
		opts.BackoffBase = time.Second
	}
	if opts.BackoffMax <= 0 {
		opts.BackoffMax = 30 * time.Second
	}
	opts.BackoffMax = max(opts.BackoffMax, opts.BackoffBase)
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &PodWorkers{
		handler:  h,
		opts:     opts,
		clock:    opts.Clock,
		log:      opts.Logger,
		baseCtx:  ctx,
		stopAll:  cancel,
		statuses: map[types.UID]*podSyncStatus{},
		names:    nameQueue{},
		deleting: map[types.UID]chan struct{}{},
	}
}

// UpdatePod hands an update to the pod's worker, starting the worker if
// needed. It never blocks on the handler. See UpdatePodOptions.
//
// Kubelet semantics: a Create for a UID whose termination was requested marks
// it "restart requested" and is otherwise ignored: once the old worker has
// finished, SyncKnownPods forgets it and the caller sends the Create again.
// Updates for a finished worker are ignored until SyncKnownPods forgets it.
func (p *PodWorkers) UpdatePod(o UpdatePodOptions) {
	if err := validate(o); err != nil {
		p.log.Error("pod update ignored", "err", err, "updateType", o.Type.String())
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return
	}
	p.updateLocked(o)
}

func validate(o UpdatePodOptions) error {
	switch {
	case o.Pod != nil:
		if o.Pod.UID == "" {
			return fmt.Errorf("pod %s/%s has no UID", o.Pod.Namespace, o.Pod.Name)
		}
	case o.RunningPod != nil:
		if o.RunningPod.UID == "" {
			return fmt.Errorf("running pod %s has no UID", o.RunningPod.FullName())
		}
		if o.Type != SyncPodKill {
			return fmt.Errorf("running pod %s (%s): runtime-only pods can only be killed", o.RunningPod.FullName(), o.RunningPod.UID)
		}
	default:
		return fmt.Errorf("neither Pod nor RunningPod set")
	}
	return nil
}

// identity returns the UID and full name an update is about.
func identity(o UpdatePodOptions) (types.UID, string) {
	if o.Pod != nil {
		return o.Pod.UID, o.Pod.Namespace + "/" + o.Pod.Name
	}
	return o.RunningPod.UID, o.RunningPod.FullName()
}

func (p *PodWorkers) updateLocked(o UpdatePodOptions) {
	uid, fullName := identity(o)
	now := p.clock.Now()
	s, exists := p.statuses[uid]
	if !exists {
		s = p.newStatus(uid, fullName)
	}
	runtimeOnly := o.Pod == nil
	if runtimeOnly {
		// Once a pod has a spec, a runtime-only kill terminates it with that spec.
		if pod := s.latestPod(); pod != nil {
			o.Pod, runtimeOnly = pod, false
		} else {
			s.runtimeOnly = true
		}
	}
	if exists && s.IsTerminationRequested() && o.Type == SyncPodCreate {
		s.restartRequested = true
		s.log.Debug("pod is terminating; restart requested, will be reconciled after it finishes")
		return
	}
	if s.finished {
		s.log.Debug("pod worker finished; update ignored", "updateType", o.Type.String())
		return
	}
	becameTerminating := p.checkTermination(s, o, runtimeOnly, now)
	shortened := false
	switch {
	case s.IsTerminated():
		if runtimeOnly {
			return // stale runtime view while SyncTerminatedPod runs
		}
	case s.IsTerminationRequested():
		s.gracePeriod, shortened = effectiveGracePeriod(s.gracePeriod, o.Pod, o.GracePeriodOverride)
	}
	if s.pending != nil && s.pending.Type == SyncPodCreate && o.Type != SyncPodKill {
		o.Type = SyncPodCreate // the worker has not seen the pod yet
	}
	s.pending = &o
	if !exists {
		p.startWorker(s)
	}
	signal(s.notify)
	if (becameTerminating || shortened) && s.cancel != nil {
		s.log.Debug("cancelling in-flight sync", "gracePeriod", s.gracePeriod)
		s.cancel()
	}
}

// checkTermination records a transition to terminating; true if it happened now.
func (p *PodWorkers) checkTermination(s *podSyncStatus, o UpdatePodOptions, runtimeOnly bool, now time.Time) bool {
	if s.IsTerminationRequested() {
		return false
	}
	switch {
	case runtimeOnly:
		s.log.Info("orphaned runtime pod must be torn down")
		s.deleted = true
	case o.Pod.DeletionTimestamp != nil:
		s.log.Info("pod marked for deletion, begin teardown")
		s.deleted = true
	case o.Pod.Status.Phase == corev1.PodFailed || o.Pod.Status.Phase == corev1.PodSucceeded:
		s.log.Info("pod is in a terminal phase, begin teardown", "phase", o.Pod.Status.Phase)
	case o.Type == SyncPodKill:
		s.log.Info("pod kill requested, begin teardown")
	default:
		return false
	}
	s.terminatingAt = now
	return true
}

func (p *PodWorkers) newStatus(uid types.UID, fullName string) *podSyncStatus {
	s := &podSyncStatus{
		uid:         uid,
		fullName:    fullName,
		log:         p.log.With("pod", fullName, "podUID", string(uid)),
		persistWait: p.deleting[uid],
	}
	p.statuses[uid] = s
	return s
}

// startWorker spawns the pod's goroutine. Called with p.mu held.
func (p *PodWorkers) startWorker(s *podSyncStatus) {
	s.notify = make(chan struct{}, 1)
	s.done = make(chan struct{})
	p.names.add(s.fullName, s.uid)
	p.wg.Add(1)
	go p.run(s)
}

// signal wakes a worker without blocking (the channel has room for one).
func signal(ch chan struct{}) {
	if ch == nil {
		return
	}
	select {
	case ch <- struct{}{}:
	default:
	}
}

// Wake asks for an immediate SyncPodSync of the pod (PLEG saw one of its
// containers change). Wakes coalesce with each other and with any pending
// update; a wake during an in-flight sync runs one more sync after it. A
// terminating or terminated worker retries its current phase now. Returns
// false when no live worker exists for uid.
func (p *PodWorkers) Wake(uid types.UID) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	s, ok := p.statuses[uid]
	if !ok || s.finished || s.notify == nil || p.stopped {
		return false
	}
	p.requeueLast(s)
	signal(s.notify)
	return true
}

// requeueLast makes the last work pending again as a SyncPodSync, unless
// something is pending already (kubelet's requeueLastPodUpdate).
func (p *PodWorkers) requeueLast(s *podSyncStatus) {
	if s.pending != nil || s.active == nil {
		return
	}
	o := *s.active
	o.Type = SyncPodSync
	s.pending = &o
}

// Shutdown stops every worker: in-flight syncs see their context cancelled,
// no new work starts, pods are left as they are (a restarted daemon adopts
// them). It waits for the goroutines until ctx is done.
func (p *PodWorkers) Shutdown(ctx context.Context) error {
	p.mu.Lock()
	p.stopped = true
	p.mu.Unlock()
	p.stopAll()
	done := make(chan struct{})
	go func() {
		p.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("pod workers shutdown: %w", ctx.Err())
	}
}
