package daemon

import (
	"context"
	"log/slog"
	"time"

	sddaemon "github.com/coreos/go-systemd/v22/daemon"
	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/kubelet/manager"
	"github.com/podhost/podhost/internal/kubelet/podworkers"
	"github.com/podhost/podhost/internal/ops/nodeshutdown"
	"github.com/podhost/podhost/internal/ops/watchdog"
)

// terminatedPoll is how often a shutdown kill checks its worker.
const terminatedPoll = 100 * time.Millisecond

// shutdownPods adapts the manager and the pod workers to nodeshutdown.Pods.
type shutdownPods struct {
	mgr     *manager.Manager
	workers *podworkers.PodWorkers
}

func (s shutdownPods) ActivePods() []*corev1.Pod { return s.mgr.ActivePods() }

// KillPod asks the pod's worker to terminate it with the grace period (the
// worker's grace only ever shrinks) and waits until no container runs.
func (s shutdownPods) KillPod(ctx context.Context, pod *corev1.Pod, grace int64) error {
	s.workers.UpdatePod(podworkers.UpdatePodOptions{Type: podworkers.SyncPodKill, Pod: pod, GracePeriodOverride: &grace})
	t := time.NewTicker(terminatedPoll)
	defer t.Stop()
	for !s.workers.IsPodKnownTerminated(pod.UID) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
}

// newShutdownManager connects to logind when graceful node shutdown is
// configured; without logind the manager only logs that it is unavailable.
func (d *daemon) newShutdownManager() (*nodeshutdown.Manager, func()) {
	cfg := nodeshutdown.Config{GracePeriod: d.cfg.ShutdownGracePeriod,
		CriticalGracePeriod: d.cfg.ShutdownGracePeriodCriticalPods, Logger: d.log}
	pods := shutdownPods{mgr: d.mgr, workers: d.workers}
	if cfg.GracePeriod <= 0 {
		return nodeshutdown.New(cfg, nil, pods, d.statuses), func() {}
	}
	l, err := nodeshutdown.ConnectLogind()
	if err != nil {
		d.log.Warn("graceful node shutdown unavailable: systemd-logind not reachable", "err", err)
		return nodeshutdown.New(cfg, nil, pods, d.statuses), func() {}
	}
	return nodeshutdown.New(cfg, l, pods, d.statuses), func() { _ = l.Close() }
}

// startWatchdog pings systemd's watchdog while hb is fresh (when the unit
// sets WatchdogSec=); the returned func stops it.
func startWatchdog(hb *watchdog.Heartbeat, log *slog.Logger) func() {
	interval, err := sddaemon.SdWatchdogEnabled(false)
	if err != nil {
		log.Warn("systemd watchdog settings", "err", err)
	}
	if interval <= 0 {
		return func() {}
	}
	log.Info("systemd watchdog enabled", "watchdogSec", interval, "ping", interval/2)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		watchdog.Run(ctx, hb, watchdog.Options{Interval: interval, Logger: log, Notify: func(s string) error {
			_, err := sddaemon.SdNotify(false, s)
			return err
		}})
	}()
	return func() { cancel(); <-done }
}
