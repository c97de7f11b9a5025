// Package prober runs containers' liveness, readiness and startup probes
// with the kubelet's semantics (pkg/kubelet/prober): one goroutine per
// (pod, container, probe type), started when the container runs and keyed
// by its container ID, so a restarted container starts with fresh results.
//
// Results: a container with a readiness probe is unready until a probe
// succeeds (without one it is ready while it runs); a container with a
// startup probe has not started until that probe succeeds, and its liveness
// and readiness probes do not run until then. A liveness or startup probe
// reaching its failureThreshold marks the container Unhealthy in Results
// and the worker holds until a new container replaces it. The prober never
// acts on a pod itself (the kubelet's prober/results manager): every change
// of a result is sent on Updates, the sync loop wakes the pod's worker, and
// the worker's sync reads Results — and kills an unhealthy container.
package prober

import (
	"context"
	"log/slog"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/podhost/podhost/internal/kubelet/handler"
	"github.com/podhost/podhost/internal/model/podstate"
	"github.com/podhost/podhost/internal/model/qos"
)

// ProbeType is liveness, readiness or startup.
type ProbeType int

// Probe types.
const (
	Liveness ProbeType = iota
	Readiness
	Startup
)

// String is the kubelet's name, as events show it ("Liveness probe failed").
func (t ProbeType) String() string {
	switch t {
	case Liveness:
		return "Liveness"
	case Readiness:
		return "Readiness"
	case Startup:
		return "Startup"
	}
	return "Unknown"
}

// Reasons passed to OnUnhealthy: the probe that failed.
const (
	ReasonLiveness = "liveness"
	ReasonStartup  = "startup"
)

// Result is a probe worker's current result.
type Result int

// Results. Initial values are the kubelet's: readiness Failure, liveness
// Success, startup Unknown.
const (
	Unknown Result = iota
	Success
	Failure
)

func (r Result) String() string {
	switch r {
	case Success:
		return "Success"
	case Failure:
		return "Failure"
	}
	return "Unknown"
}

// Execer runs a command in a running container (runtime.Runtime.Exec).
type Execer = handler.Execer

// Recorder records pod events (the manager).
type Recorder interface {
	Event(uid types.UID, typ, reason, message string)
}

// Options configure a Manager.
type Options struct {
	// Exec runs exec probes.
	Exec Execer
	// Recorder receives Unhealthy and ProbeWarning events; may be nil.
	Recorder Recorder
	Clock    clock.WithTicker
	Logger   *slog.Logger
}

// Unhealthy names a container instance whose liveness or startup probe
// reached its failureThreshold: it must be killed (and restarted per the
// pod's restartPolicy).
type Unhealthy struct {
	ContainerID string
	Reason      string // ReasonLiveness or ReasonStartup
}

// PodResults are the probe results of a pod's running containers, by
// container name.
type PodResults struct {
	// Ready: containers with a readiness or startup probe; a container
	// that has not started is not ready. Absent: ready while it runs.
	Ready map[string]bool
	// Started: containers with a startup probe.
	Started map[string]bool
	// Unhealthy: containers to kill.
	Unhealthy map[string]Unhealthy
}

// Manager owns the probe workers of every pod.
type Manager struct {
	opts   Options
	clock  clock.WithTicker
	log    *slog.Logger
	runner runner
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	updates chan types.UID

	mu     sync.Mutex
	pods   map[types.UID]*podProbes
	closed bool
}

// updatesBuffer is the room in Updates before a probe worker waits for the
// reader (the kubelet's results manager uses 20).
const updatesBuffer = 64

type podProbes struct {
	pod   *corev1.Pod
	podIP string
	// noLiveness: the pod is terminating; liveness and startup probes stop
	// (kubelet's StopLivenessAndStartup) until Forget.
	noLiveness bool
	containers map[string]*containerProbes
}

// containerProbes are the workers of one running container.
type containerProbes struct {
	id        string
	startedAt time.Time
	spec      *corev1.Container
	workers   map[ProbeType]*worker
}

// New returns a Manager. Close stops its workers.
func New(opts Options) *Manager {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Manager{
		opts: opts, clock: opts.Clock, log: opts.Logger.With("component", "prober"),
		runner: &handlers{exec: opts.Exec, transport: handler.NewProbeTransport()},
		ctx:    ctx, cancel: cancel, pods: map[types.UID]*podProbes{},
		updates: make(chan types.UID, updatesBuffer),
	}
}

// Updates receives the UID of a pod whenever one of its probe results
// changed. Read it until Close: probe workers wait for room.
func (m *Manager) Updates() <-chan types.UID { return m.updates }

// Close stops every worker and waits for them.
func (m *Manager) Close() {
	m.mu.Lock()
	m.closed = true
	m.pods = map[types.UID]*podProbes{}
	m.mu.Unlock()
	m.cancel()
	m.wg.Wait()
	if h, ok := m.runner.(*handlers); ok {
		h.transport.CloseIdleConnections()
	}
}

// Sync tells the manager which of pod's containers run (the newest instance
// of each, from running, which may be nil) and the IP probes connect to. It
// starts workers for newly running containers, stops those of containers
// that stopped or were replaced, and asks readiness probes that have not
// succeeded yet to run now (as the kubelet does on each status update).
func (m *Manager) Sync(pod *corev1.Pod, running *podstate.Pod, podIP string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
	pp := m.pods[pod.UID]
	if pp == nil {
		if !hasProbes(pod) {
			return
		}
		pp = &podProbes{containers: map[string]*containerProbes{}}
		m.pods[pod.UID] = pp
	}
	pp.pod, pp.podIP = pod, podIP
	for _, c := range probed(pod) {
		m.syncContainer(pp, c, newestRunning(running, c.Name))
	}
	if len(pp.containers) == 0 && !pp.noLiveness {
		delete(m.pods, pod.UID)
	}
}

func (m *Manager) syncContainer(pp *podProbes, c *corev1.Container, rc *podstate.Container) {
	cp := pp.containers[c.Name]
	if cp != nil && rc != nil && cp.id == rc.ID {
		cp.triggerReadiness()
		return
	}
	if cp != nil {
		cp.stop()
		delete(pp.containers, c.Name)
	}
	if rc == nil || (c.LivenessProbe == nil && c.ReadinessProbe == nil && c.StartupProbe == nil) {
		return
	}
	cp = &containerProbes{id: rc.ID, startedAt: rc.StartedAt, spec: c, workers: map[ProbeType]*worker{}}
	pp.containers[c.Name] = cp
	for t, p := range map[ProbeType]*corev1.Probe{Liveness: c.LivenessProbe, Readiness: c.ReadinessProbe, Startup: c.StartupProbe} {
		if p == nil || (pp.noLiveness && t != Readiness) {
			continue
		}
		m.startWorker(pp.pod.UID, cp, t, p)
	}
}

// StopLivenessAndStartup stops the pod's liveness and startup probes (the
// pod is terminating: its containers are being stopped anyway) until Forget.
func (m *Manager) StopLivenessAndStartup(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	pp := m.pods[uid]
	if pp == nil {
		return // nothing runs probes; a terminating pod starts no container
	}
	pp.noLiveness = true
	for _, cp := range pp.containers {
		for _, t := range []ProbeType{Liveness, Startup} {
			if w := cp.workers[t]; w != nil {
				w.cancel()
				delete(cp.workers, t)
			}
		}
	}
}

// Forget stops every worker of uid and drops its results.
func (m *Manager) Forget(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if pp := m.pods[uid]; pp != nil {
		for _, cp := range pp.containers {
			cp.stop()
		}
		delete(m.pods, uid)
	}
}

// Results returns the probe results of uid's running containers that
// have probes (see PodResults).
func (m *Manager) Results(uid types.UID) PodResults {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := PodResults{Ready: map[string]bool{}, Started: map[string]bool{}, Unhealthy: map[string]Unhealthy{}}
	pp := m.pods[uid]
	if pp == nil {
		return r
	}
	for name, cp := range pp.containers {
		s := cp.startedLocked()
		if _, ok := cp.workers[Startup]; ok {
			r.Started[name] = s
		}
		if w := cp.workers[Readiness]; w != nil {
			r.Ready[name] = s && w.result == Success
		} else if !s {
			r.Ready[name] = false
		}
		if w := cp.workers[Liveness]; w != nil && w.result == Failure {
			r.Unhealthy[name] = Unhealthy{ContainerID: cp.id, Reason: ReasonLiveness}
		}
		if w := cp.workers[Startup]; w != nil && w.result == Failure {
			r.Unhealthy[name] = Unhealthy{ContainerID: cp.id, Reason: ReasonStartup}
		}
	}
	return r
}

// Ready reports whether the container is ready as far as its probes go:
// true for a running container without readiness or startup probe, and
// for one the manager does not track.
func (m *Manager) Ready(uid types.UID, container string) bool {
	r, ok := m.Results(uid).Ready[container]
	return r || !ok
}

// Started reports whether the container's startup probe has succeeded
// (true without one).
func (m *Manager) Started(uid types.UID, container string) bool {
	s, ok := m.Results(uid).Started[container]
	return s || !ok
}

// startedLocked: the startup probe succeeded, or there is none (running).
func (cp *containerProbes) startedLocked() bool {
	w := cp.workers[Startup]
	return w == nil || w.result == Success
}

func (cp *containerProbes) stop() {
	for _, w := range cp.workers {
		w.cancel()
	}
}

func (cp *containerProbes) triggerReadiness() {
	if w := cp.workers[Readiness]; w != nil && w.result != Success {
		select {
		case w.trigger <- struct{}{}:
		default:
		}
	}
}

func hasProbes(pod *corev1.Pod) bool {
	for _, c := range probed(pod) {
		if c.LivenessProbe != nil || c.ReadinessProbe != nil || c.StartupProbe != nil {
			return true
		}
	}
	return false
}

// probed lists the containers that may have probes: sidecars (restartable
// init containers) and regular containers.
func probed(pod *corev1.Pod) []*corev1.Container {
	var out []*corev1.Container
	for i := range pod.Spec.InitContainers {
		if qos.IsRestartable(&pod.Spec.InitContainers[i]) {
			out = append(out, &pod.Spec.InitContainers[i])
		}
	}
	for i := range pod.Spec.Containers {
		out = append(out, &pod.Spec.Containers[i])
	}
	return out
}

// newestRunning is the newest instance of name if it runs, else nil.
func newestRunning(p *podstate.Pod, name string) *podstate.Container {
	if p == nil {
		return nil
	}
	if c := p.Find(name); c != nil && c.State == podstate.StateRunning {
		return c
	}
	return nil
}
