package podworkers

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/podhost/podhost/internal/model/podstate"
	"github.com/podhost/podhost/internal/model/records"
)

// work is one unit handed to the handler, taken under the lock.
type work struct {
	ctx   context.Context
	kind  PodWorkerState
	opts  UpdatePodOptions
	grace int64
	// runtimeOnly: tear down opts.RunningPod with SyncTerminatingRuntimePod.
	runtimeOnly bool
}

// startResult says what the worker loop does after startSync.
type startResult int

const (
	startRun  startResult = iota // do w
	startIdle                    // nothing pending, or waiting for the full name
	startExit                    // worker finished or forgotten
)

// run is the pod's goroutine (kubelet's podWorkerLoop).
func (p *PodWorkers) run(s *podSyncStatus) {
	defer p.wg.Done()
	defer close(s.done)
	notify := s.notify // set before the goroutine started; finish() nils the field
	var (
		timer    clock.Timer
		timerC   <-chan time.Time
		lastSync time.Time
	)
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		select {
		case <-notify:
		case <-timerC:
			timerC = nil
			p.mu.Lock()
			p.requeueLast(s)
			p.mu.Unlock()
		case <-p.baseCtx.Done():
			return
		}
		w, res := p.startSync(s)
		if res == startExit {
			return
		}
		if res == startIdle {
			continue
		}
		p.persist(s, w)
		started := p.clock.Now()
		out, err := p.doWorkOwnStack(s, w, lastSync)
		lastSync = p.clock.Now()
		if err == nil && out.Settled {
			lastSync = started // SyncResult.Settled
		}
		delay, exit := p.completeWork(s, w, out, err)
		if exit {
			if p.opts.OnFinished != nil {
				p.opts.OnFinished(s.uid)
			}
			return
		}
		timer, timerC = p.arm(s, timer, delay)
	}
}

// arm (re)starts the worker's retry/resync timer; delay 0 disarms it (the
// next work is already pending).
func (p *PodWorkers) arm(s *podSyncStatus, t clock.Timer, delay time.Duration) (clock.Timer, <-chan time.Time) {
	if t != nil {
		t.Stop()
	}
	if delay <= 0 {
		return t, nil
	}
	if t == nil {
		t = p.clock.NewTimer(delay)
	} else {
		t.Reset(delay)
	}
	if p.onSchedule != nil {
		p.onSchedule(s.uid, delay)
	}
	return t, t.C()
}

// startSync consumes the pending update (kubelet's startPodSync).
func (p *PodWorkers) startSync(s *podSyncStatus) (work, startResult) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if s.finished || p.stopped || p.statuses[s.uid] != s {
		return work{}, startExit
	}
	if s.pending == nil {
		return work{}, startIdle
	}
	terminating := func(u types.UID) bool {
		o := p.statuses[u]
		return o != nil && o.IsTerminationRequested()
	}
	if !p.names.mayAct(s.fullName, s.uid, terminating, s.runtimeOnly) {
		s.log.Debug("pod waits for an older pod with the same full name", "holder", string(p.names.holderOf(s.fullName)))
		return work{}, startIdle // keep pending; woken when the holder finishes
	}
	w := work{kind: s.WorkType(), opts: *s.pending, grace: s.gracePeriod}
	s.pending = nil
	select { // the pending update is consumed; drop its notification
	case <-s.notify:
	default:
	}
	if s.ctx == nil || s.ctx.Err() != nil {
		s.ctx, s.cancel = context.WithCancel(p.baseCtx)
	}
	w.ctx = s.ctx
	if !s.IsStarted() {
		s.startedAt = p.clock.Now()
	}
	if w.kind != SyncPod {
		s.startedTerminating = true
	}
	s.mergeActive(w.opts)
	w.runtimeOnly = w.opts.Pod == nil
	return w, startRun
}

// doWorkOwnStack runs doWork on a goroutine of its own and waits for it. A
// sync's call chain (containerd client, gRPC, volumes, CNI) grows its
// stack to 16–32 KiB; on the pod's long-lived goroutine every resync grew
// it again soon after the GC shrank it, so with hundreds of pods the idle
// workers' stacks held megabytes (docs/decisions.md 16).
func (p *PodWorkers) doWorkOwnStack(s *podSyncStatus, w work, lastSync time.Time) (SyncResult, error) {
	type result struct {
		out SyncResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		r := result{err: errors.New("sync ended without returning (runtime.Goexit)")}
		defer func() { done <- r }()
		r.out, r.err = p.doWork(s, w, lastSync)
	}()
	r := <-done
	return r.out, r.err
}

// doWork calls the handler for w, without the lock.
func (p *PodWorkers) doWork(s *podSyncStatus, w work, lastSync time.Time) (SyncResult, error) {
	s.log.Debug("processing pod event", "work", w.kind.String(), "updateType", w.opts.Type.String())
	switch {
	case w.kind == TerminatedPod:
		return SyncResult{}, p.handler.SyncTerminatedPod(w.ctx, w.opts.Pod)
	case w.runtimeOnly:
		return SyncResult{}, p.handler.SyncTerminatingRuntimePod(w.ctx, w.opts.RunningPod)
	}
	running, err := p.observe(w, lastSync)
	if err != nil {
		return SyncResult{}, err
	}
	if w.kind == TerminatingPod {
		return SyncResult{}, p.handler.SyncTerminatingPod(w.ctx, w.opts.Pod, running, w.grace)
	}
	return p.handler.SyncPod(w.ctx, w.opts.Type, w.opts.Pod, running)
}

// observe returns the runtime state passed to the handler.
func (p *PodWorkers) observe(w work, lastSync time.Time) (*podstate.Pod, error) {
	if p.opts.Cache == nil {
		return w.opts.RunningPod, nil
	}
	return p.opts.Cache.GetNewerThan(w.ctx, w.opts.Pod.UID, lastSync)
}

// completeWork records the outcome (kubelet's complete* + completeWork) and
// returns when to run again if nothing else arrives, or exit.
func (p *PodWorkers) completeWork(s *podSyncStatus, w work, res SyncResult, err error) (time.Duration, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.clock.Now()
	delay := time.Duration(0)
	switch {
	case err != nil && errors.Is(err, context.Canceled) && w.ctx.Err() != nil:
		// Cancelled by a kill, a shorter grace period or Shutdown: the
		// cause already queued the next work.
		s.log.Debug("sync cancelled", "work", w.kind.String())
		delay = p.opts.BackoffBase
	case err != nil:
		s.failures++
		delay = backoff(p.opts.BackoffBase, p.opts.BackoffMax, s.failures)
		s.log.Error("error syncing pod, will retry", "work", w.kind.String(), "err", err, "failures", s.failures, "retryIn", delay.String())
	case w.kind == TerminatedPod || w.runtimeOnly:
		s.log.Info("pod worker finished", "work", w.kind.String())
		p.finish(s, now)
		return 0, true
	case w.kind == TerminatingPod:
		s.log.Info("pod terminated all containers")
		s.terminatedAt = now
		s.failures = 0
		p.requeueLast(s)
	case res.Terminal:
		s.log.Info("pod is terminal, begin teardown")
		if s.terminatingAt.IsZero() {
			s.terminatingAt = now
		}
		s.startedTerminating = true
		s.gracePeriod, _ = effectiveGracePeriod(s.gracePeriod, s.latestPod(), nil)
		s.failures = 0
		p.requeueLast(s)
	default:
		s.failures = 0
		delay = jitter(p.opts.ResyncInterval, resyncJitter)
		if res.RequeueAfter > 0 && res.RequeueAfter < delay {
			delay = res.RequeueAfter
		}
	}
	if s.pending != nil {
		signal(s.notify)
	}
	return max(delay, 0), false
}

// finish marks the worker done and frees its full name. p.mu held.
func (p *PodWorkers) finish(s *podSyncStatus, now time.Time) {
	if s.terminatedAt.IsZero() {
		s.terminatedAt = now
	}
	s.finished = true
	s.pending = nil
	s.notify = nil
	if s.cancel != nil {
		s.cancel()
	}
	p.wakeWaiters(p.names.remove(s.fullName, s.uid))
}

func (p *PodWorkers) wakeWaiters(uids []types.UID) {
	for _, u := range uids {
		if o := p.statuses[u]; o != nil {
			signal(o.notify)
		}
	}
}

// persist writes the worker's phase to the Store before its work starts
// (record intent first). Errors are logged and retried before the next work.
func (p *PodWorkers) persist(s *podSyncStatus, w work) {
	if p.opts.Store == nil || w.runtimeOnly {
		return
	}
	key := persistKey{phase: w.kind.persistedPhase(), grace: w.grace, pod: w.opts.Pod}
	if w.kind == SyncPod {
		key.grace = 0
	}
	if key == s.persisted {
		return
	}
	if s.persistWait != nil {
		select {
		case <-s.persistWait:
		case <-p.baseCtx.Done():
			return
		}
		s.persistWait = nil
	}
	rec := records.WorkerRecord{UID: s.uid, FullName: s.fullName, Phase: key.phase, GracePeriod: key.grace, UpdatedAt: p.clock.Now()}
	raw, err := json.Marshal(w.opts.Pod)
	if err != nil {
		s.log.Error("encode pod for worker record", "err", err)
	}
	rec.Pod = raw
	if err := p.opts.Store.PutWorker(rec); err != nil {
		s.log.Error("persist worker phase", "phase", key.phase, "err", err)
		return
	}
	s.persisted = key
}
