package daemon

import (
	"context"
	"log/slog"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/manager"
	"github.com/podhost/podhost/internal/podworkers"
	"github.com/podhost/podhost/internal/prober"
	"github.com/podhost/podhost/internal/runtime"
	"github.com/podhost/podhost/internal/syncer"
)

// probeHooks connects the prober to the syncer and the pod workers, which
// are built after it (the syncer needs the prober).
type probeHooks struct {
	ctx     context.Context
	log     *slog.Logger
	syn     *syncer.Syncer
	workers *podworkers.PodWorkers
}

// newProber returns the probe manager and its hooks; connect the hooks once
// the syncer and pod workers exist (before any pod syncs).
func newProber(ctx context.Context, rt *runtime.Runtime, mgr *manager.Manager, log *slog.Logger) (*prober.Manager, *probeHooks) {
	h := &probeHooks{ctx: ctx, log: log}
	m := prober.New(prober.Options{Exec: rt, Recorder: mgr, Logger: log, OnChange: h.changed, OnUnhealthy: h.unhealthy})
	return m, h
}

func (h *probeHooks) connect(syn *syncer.Syncer, workers *podworkers.PodWorkers) {
	h.syn, h.workers = syn, workers
}

// changed: a probe result changed, so the pod's status did; sync it.
func (h *probeHooks) changed(uid types.UID) { h.workers.Wake(uid) }

// unhealthy: a liveness or startup probe failed; stop the container (the
// pod's restart policy applies at the next sync).
func (h *probeHooks) unhealthy(pod *corev1.Pod, containerID, containerName, reason string) {
	if err := h.syn.KillContainer(h.ctx, pod, containerID, containerName, reason); err != nil {
		h.log.Warn("kill unhealthy container", "pod", pod.Namespace+"/"+pod.Name, "container", containerName, "err", err)
	}
}
