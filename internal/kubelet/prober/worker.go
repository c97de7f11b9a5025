package prober

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// maxProbeRetries is how often a probe that errors (could not be run, as
// opposed to failed) is tried before its result is thrown away.
const maxProbeRetries = 3

// Event reasons, as the kubelet's.
const (
	EventUnhealthy    = "Unhealthy"
	EventProbeWarning = "ProbeWarning"
)

// worker runs one probe of one container instance.
type worker struct {
	m         *Manager
	uid       types.UID
	name      string
	id        string
	startedAt time.Time
	container *corev1.Container
	probeType ProbeType
	spec      *corev1.Probe
	cancel    context.CancelFunc
	trigger   chan struct{}
	ticker    clock.Ticker

	result Result // guarded by m.mu

	// Owned by the worker's goroutine.
	lastResult Result
	resultRun  int
	onHold     bool
}

// target is what a probe needs from the manager's state, read under its lock.
type target struct {
	pod     *corev1.Pod
	podIP   string
	started bool
}

func initialResult(t ProbeType) Result {
	switch t {
	case Readiness:
		return Failure
	case Liveness:
		return Success
	}
	return Unknown
}

// startWorker starts a worker for probe p of cp. Caller holds m.mu.
func (m *Manager) startWorker(uid types.UID, cp *containerProbes, t ProbeType, p *corev1.Probe) {
	ctx, cancel := context.WithCancel(m.ctx)
	w := &worker{
		m: m, uid: uid, name: cp.spec.Name, id: cp.id, startedAt: cp.startedAt, container: cp.spec,
		probeType: t, spec: p, cancel: cancel, trigger: make(chan struct{}, 1), result: initialResult(t),
	}
	period := time.Duration(p.PeriodSeconds) * time.Second
	if period <= 0 {
		period = 10 * time.Second
	}
	w.ticker = m.clock.NewTicker(period)
	cp.workers[t] = w
	m.wg.Add(1)
	go w.run(ctx)
}

// run probes right away, then every periodSeconds (or when triggered),
// until the worker is stopped. The ticker is made by startWorker, so a
// Sync that returned has its period running (tests step a fake clock).
func (w *worker) run(ctx context.Context) {
	defer w.m.wg.Done()
	defer w.ticker.Stop()
	for {
		w.doProbe(ctx)
		select {
		case <-ctx.Done():
			return
		case <-w.ticker.C():
		case <-w.trigger:
		}
	}
}

// doProbe is one round of the kubelet's worker.doProbe.
func (w *worker) doProbe(ctx context.Context) {
	if w.onHold || ctx.Err() != nil {
		return
	}
	tgt, ok := w.m.target(w)
	if !ok {
		return
	}
	if int32(w.m.clock.Since(w.startedAt).Seconds()) < w.spec.InitialDelaySeconds {
		return
	}
	// Startup probes stop once the container started; the others wait for it.
	if (w.probeType == Startup) == tgt.started {
		return
	}
	req := request{pod: tgt.pod, container: w.container, containerID: w.id, podIP: tgt.podIP, probe: w.spec}
	res, err := w.m.probe(ctx, w.probeType, req)
	if err != nil || ctx.Err() != nil {
		return // the probe could not run: its result is thrown away
	}
	w.record(ctx, tgt.pod, res)
}

// record applies the thresholds and publishes the result once reached.
func (w *worker) record(ctx context.Context, pod *corev1.Pod, res Result) {
	if w.lastResult == res {
		w.resultRun++
	} else {
		w.lastResult, w.resultRun = res, 1
	}
	if (res == Failure && w.resultRun < int(w.spec.FailureThreshold)) ||
		(res == Success && w.resultRun < int(w.spec.SuccessThreshold)) {
		return
	}
	if res == Failure && w.probeType != Readiness {
		// The container must be restarted: probe no more until a new one
		// runs. Its pod's worker reads the failure from Results and kills it.
		w.onHold, w.resultRun = true, 0
		w.m.log.Info("container failed "+strings.ToLower(w.probeType.String())+" probe, will be killed",
			"pod", pod.Namespace+"/"+pod.Name, "container", w.name, "id", w.id)
	}
	w.m.setResult(ctx, w, res)
}

// target returns the worker's pod state; false once the worker was removed.
func (m *Manager) target(w *worker) (target, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	pp := m.pods[w.uid]
	if pp == nil {
		return target{}, false
	}
	cp := pp.containers[w.name]
	if cp == nil || cp.workers[w.probeType] != w {
		return target{}, false
	}
	return target{pod: pp.pod, podIP: pp.podIP, started: cp.startedLocked()}, true
}

// setResult stores a worker's result and, if it changed, sends the pod's
// UID on Updates (waiting for room until the worker is stopped).
func (m *Manager) setResult(ctx context.Context, w *worker, res Result) {
	m.mu.Lock()
	changed := w.result != res
	w.result = res
	m.mu.Unlock()
	if !changed {
		return
	}
	m.log.Debug("probe result changed", "podUID", string(w.uid), "container", w.name,
		"probe", w.probeType.String(), "result", res.String())
	select {
	case m.updates <- w.uid:
	case <-ctx.Done():
	}
}

// probe runs one probe (retrying errors) and records the kubelet's events.
// An error means the result is to be thrown away.
func (m *Manager) probe(ctx context.Context, t ProbeType, req request) (Result, error) {
	var (
		out    outcome
		output string
		err    error
	)
	for range maxProbeRetries {
		out, output, err = m.runner.run(ctx, req)
		if err == nil || ctx.Err() != nil {
			break
		}
	}
	if ctx.Err() != nil {
		return Unknown, ctx.Err()
	}
	uid := req.pod.UID
	if err != nil {
		m.log.Debug("probe errored", "podUID", string(uid), "container", req.container.Name, "probe", t.String(), "err", err)
		m.event(uid, EventUnhealthy, fmt.Sprintf("%s probe errored and resulted in unknown state: %v", t, err))
		return Failure, err
	}
	switch out {
	case outcomeSuccess:
		return Success, nil
	case outcomeWarning:
		m.event(uid, EventProbeWarning, fmt.Sprintf("%s probe warning: %s", t, trimOutput(output)))
		return Success, nil
	case outcomeFailure:
		m.event(uid, EventUnhealthy, fmt.Sprintf("%s probe failed: %s", t, trimOutput(output)))
	}
	return Failure, nil
}

func (m *Manager) event(uid types.UID, reason, msg string) {
	if m.opts.Recorder != nil {
		m.opts.Recorder.Event(uid, corev1.EventTypeWarning, reason, msg)
	}
}

func trimOutput(s string) string { return strings.TrimRight(s, " \t\r\n") }
