// Package nodeshutdown is podhost's graceful node shutdown (the kubelet's
// pkg/kubelet/nodeshutdown): it holds a systemd-logind "delay" inhibitor
// for shutdownGracePeriod; when logind announces a shutdown
// (PrepareForShutdown(true)) it terminates every pod itself through the pod
// workers — preStop hooks, STOPSIGNAL, each pod's grace period capped by
// the budget — regular pods first, then critical ones (priority class
// system-node-critical / system-cluster-critical), records them as
// terminated by the shutdown, and releases the inhibitor so the shutdown
// goes on. The manifests stay: the next boot starts the pods again.
package nodeshutdown

import (
	"context"
	"log/slog"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/desired/manifest"
	"github.com/podhost/podhost/internal/desired/order"
)

// Logind is the part of systemd-logind the manager uses (LogindConn
// implements it over D-Bus).
type Logind interface {
	// InhibitDelayMax is logind's InhibitDelayMaxUSec: the longest a delay
	// inhibitor may hold a shutdown.
	InhibitDelayMax() (time.Duration, error)
	// SetInhibitDelayMax raises it (a logind.conf.d drop-in, then a reload).
	SetInhibitDelayMax(d time.Duration) error
	// Inhibit takes a "shutdown" inhibitor in "delay" mode; release it to
	// let the shutdown proceed.
	Inhibit() (release func() error, err error)
	// WatchShutdown delivers PrepareForShutdown's argument: true when a
	// shutdown starts, false when it was cancelled. Closed when ctx ends.
	WatchShutdown(ctx context.Context) (<-chan bool, error)
}

// Pods is how the manager sees and stops pods (the daemon adapts the
// manager's desired set and the pod workers).
type Pods interface {
	// ActivePods are the pods that may have running containers.
	ActivePods() []*corev1.Pod
	// KillPod terminates pod through its worker with gracePeriod seconds
	// and returns once it is terminated or ctx is done.
	KillPod(ctx context.Context, pod *corev1.Pod, gracePeriod int64) error
}

// Recorder marks a pod as terminated by the node shutdown (status reason
// and message, and an event).
type Recorder interface {
	MarkNodeShutdown(pod *corev1.Pod)
}

// Config are the kubelet's shutdownGracePeriod and
// shutdownGracePeriodCriticalPods; GracePeriod 0 turns the feature off.
type Config struct {
	GracePeriod         time.Duration
	CriticalGracePeriod time.Duration
	Logger              *slog.Logger
}

// Manager runs graceful node shutdown.
type Manager struct {
	cfg      Config
	logind   Logind
	pods     Pods
	recorder Recorder
	log      *slog.Logger
}

// New returns a Manager; logind nil means logind is not reachable.
func New(cfg Config, logind Logind, pods Pods, rec Recorder) *Manager {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Manager{cfg: cfg, logind: logind, pods: pods, recorder: rec, log: cfg.Logger}
}

// Enabled reports whether shutdownGracePeriod is set.
func (m *Manager) Enabled() bool { return m.cfg.GracePeriod > 0 }

// Run holds the inhibitor and handles shutdowns until ctx is done. Problems
// with logind are logged, never fatal: podhost then runs without graceful
// node shutdown (systemd still stops the pods' scopes at shutdown).
func (m *Manager) Run(ctx context.Context) error {
	if !m.Enabled() {
		return nil
	}
	if m.logind == nil {
		m.log.Warn("graceful node shutdown unavailable: systemd-logind is not reachable; at shutdown systemd stops podhost and the pods' scopes itself")
		return nil
	}
	m.ensureInhibitDelay()
	events, err := m.logind.WatchShutdown(ctx)
	if err != nil {
		m.log.Warn("graceful node shutdown unavailable: watch logind PrepareForShutdown", "err", err)
		return nil
	}
	release, err := m.logind.Inhibit()
	if err != nil {
		m.log.Warn("graceful node shutdown unavailable: take the logind shutdown inhibitor", "err", err)
		return nil
	}
	m.log.Info("graceful node shutdown enabled: holding a logind delay inhibitor",
		"shutdownGracePeriod", m.cfg.GracePeriod, "shutdownGracePeriodCriticalPods", m.cfg.CriticalGracePeriod)
	defer func() {
		if release != nil {
			_ = release()
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return nil
		case active, ok := <-events:
			if !ok {
				return nil
			}
			release = m.handle(ctx, active, release)
		}
	}
}

// handle reacts to one PrepareForShutdown signal and returns the
// inhibitor's release func (nil while none is held).
func (m *Manager) handle(ctx context.Context, active bool, release func() error) func() error {
	if !active {
		if release != nil {
			return release
		}
		m.log.Info("node shutdown cancelled; taking the inhibitor again")
		r, err := m.logind.Inhibit()
		if err != nil {
			m.log.Warn("take the logind shutdown inhibitor again", "err", err)
			return nil
		}
		return r
	}
	m.log.Info("node is shutting down: terminating pods", "shutdownGracePeriod", m.cfg.GracePeriod)
	m.Shutdown(ctx)
	if release != nil {
		if err := release(); err != nil {
			m.log.Warn("release the logind shutdown inhibitor", "err", err)
		}
		m.log.Info("pods terminated; released the shutdown inhibitor")
	}
	return nil
}

// ensureInhibitDelay raises logind's InhibitDelayMaxSec to the grace
// period when it is shorter (logind's default is 5 s), as the kubelet does.
func (m *Manager) ensureInhibitDelay() {
	cur, err := m.logind.InhibitDelayMax()
	if err != nil {
		m.log.Warn("read logind InhibitDelayMaxUSec", "err", err)
		return
	}
	if cur >= m.cfg.GracePeriod {
		return
	}
	if err := m.logind.SetInhibitDelayMax(m.cfg.GracePeriod); err != nil {
		m.log.Warn("raise logind InhibitDelayMaxSec", "want", m.cfg.GracePeriod, "err", err)
		return
	}
	if cur, err = m.logind.InhibitDelayMax(); err == nil && cur < m.cfg.GracePeriod {
		m.log.Warn("logind InhibitDelayMaxSec is shorter than shutdownGracePeriod: pods get less time at shutdown",
			"inhibitDelayMax", cur, "shutdownGracePeriod", m.cfg.GracePeriod)
	}
}

// Shutdown terminates every active pod, group by group (see Plan); each
// group is waited for at most its budget.
func (m *Manager) Shutdown(ctx context.Context) {
	for _, g := range Plan(m.pods.ActivePods(), m.cfg.GracePeriod, m.cfg.CriticalGracePeriod) {
		m.killGroup(ctx, g)
	}
}

func (m *Manager) killGroup(ctx context.Context, g Group) {
	if len(g.Pods) == 0 {
		return
	}
	m.log.Info("terminating pods for node shutdown", "critical", g.Critical, "pods", len(g.Pods), "budget", g.Budget)
	gctx, cancel := context.WithTimeout(ctx, g.Budget)
	defer cancel()
	for _, level := range stopLevels(g.Pods) {
		m.killLevel(gctx, level)
	}
}

// killLevel terminates pods in parallel and waits for them (or ctx). A
// level whose turn comes after the budget ran out is still told to stop.
func (m *Manager) killLevel(ctx context.Context, pods []PodKill) {
	var wg sync.WaitGroup
	for _, p := range pods {
		m.recorder.MarkNodeShutdown(p.Pod)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := m.pods.KillPod(ctx, p.Pod, p.GracePeriod); err != nil {
				m.log.Warn("pod not terminated within the shutdown budget", "pod", manifest.FullName(p.Pod), "err", err)
			}
		}()
	}
	wg.Wait()
}

// stopLevels orders a group by podhost.io/after: pods others depend on stop
// after those dependants (order.StopLevels); without the annotation every
// pod is in one level.
func stopLevels(kills []PodKill) [][]PodKill {
	byPod := make(map[*corev1.Pod]PodKill, len(kills))
	pods := make([]*corev1.Pod, 0, len(kills))
	for _, k := range kills {
		byPod[k.Pod] = k
		pods = append(pods, k.Pod)
	}
	var out [][]PodKill
	for _, level := range order.StopLevels(pods) {
		var l []PodKill
		for _, p := range level {
			l = append(l, byPod[p])
		}
		out = append(out, l)
	}
	return out
}

// PodKill is one pod of a group with its grace period for the shutdown.
type PodKill struct {
	Pod         *corev1.Pod
	GracePeriod int64
}

// Group is a set of pods terminated together within Budget.
type Group struct {
	Critical bool
	Budget   time.Duration
	Pods     []PodKill
}

// Plan orders the shutdown as the kubelet does: regular pods first, within
// gracePeriod - criticalPeriod, then critical pods within criticalPeriod.
// Each pod gets min(terminationGracePeriodSeconds, its group's budget),
// at least 1 s.
func Plan(pods []*corev1.Pod, gracePeriod, criticalPeriod time.Duration) []Group {
	criticalPeriod = min(criticalPeriod, gracePeriod)
	groups := []Group{{Budget: gracePeriod - criticalPeriod}, {Critical: true, Budget: criticalPeriod}}
	for _, pod := range pods {
		i := 0
		if IsCritical(pod) {
			i = 1
		}
		groups[i].Pods = append(groups[i].Pods, PodKill{Pod: pod, GracePeriod: podGrace(pod, groups[i].Budget)})
	}
	return groups
}

func podGrace(pod *corev1.Pod, budget time.Duration) int64 {
	g := int64(corev1.DefaultTerminationGracePeriodSeconds)
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		g = *pod.Spec.TerminationGracePeriodSeconds
	}
	return max(1, min(g, int64(budget/time.Second)))
}

// SystemCriticalPriority is the kubelet's scheduling.SystemCriticalPriority.
const SystemCriticalPriority = 2 * 1000000000

// IsCritical: the pod's priority class is system-node-critical or
// system-cluster-critical, or its priority is at least
// SystemCriticalPriority (the kubelet's IsCriticalPodBasedOnPriority).
func IsCritical(pod *corev1.Pod) bool {
	switch pod.Spec.PriorityClassName {
	case "system-node-critical", "system-cluster-critical":
		return true
	}
	return pod.Spec.Priority != nil && *pod.Spec.Priority >= SystemCriticalPriority
}
