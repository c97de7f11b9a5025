package manager

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/podhost/podhost/internal/podstate"
	"github.com/podhost/podhost/internal/podworkers"
)

// Handler wraps the syncer so the manager learns when each pod's first sync
// has finished (for readiness) — whatever its outcome.
type Handler struct {
	podworkers.SyncHandler
	m *Manager
}

// WrapHandler returns h wrapped for readiness tracking.
func (m *Manager) WrapHandler(h podworkers.SyncHandler) *Handler {
	return &Handler{SyncHandler: h, m: m}
}

// SyncPod calls the syncer and marks the pod synced.
func (h *Handler) SyncPod(ctx context.Context, t podworkers.UpdateType, pod *corev1.Pod, running *podstate.Pod) (bool, error) {
	terminal, err := h.SyncHandler.SyncPod(ctx, t, pod, running)
	if ctx.Err() == nil {
		h.m.markSynced(pod.UID)
	}
	return terminal, err
}

func statusEqual(a, b corev1.PodStatus) bool { return equality.Semantic.DeepEqual(a, b) }
