package syncer

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/podstate"
	"github.com/podhost/podhost/internal/qos"
)

// minSidecarGrace is the least grace a sidecar gets when the regular
// containers used up the pod's (the kubelet's minimumGracePeriodInSeconds).
const minSidecarGrace = 2 * time.Second

// stopPodContainers stops a pod's running containers in the kubelet's
// termination order: every container but the sidecars in parallel, then the
// sidecars one by one in reverse order of declaration, each with what is
// left of grace (at least minSidecarGrace), as kuberuntime's
// terminationOrdering does.
func (s *Syncer) stopPodContainers(ctx context.Context, pod *corev1.Pod, cs []*podstate.Container, grace time.Duration) error {
	first, sidecars := splitSidecars(pod, cs)
	deadline := s.now().Add(grace)
	if err := s.stopContainers(ctx, pod, first, grace); err != nil {
		return err
	}
	for i := len(sidecars) - 1; i >= 0; i-- {
		left := max(deadline.Sub(s.now()), minSidecarGrace)
		if err := s.stopContainers(ctx, pod, []*podstate.Container{sidecars[i]}, min(left, grace)); err != nil {
			return err
		}
	}
	return nil
}

// splitSidecars separates running sidecars (ordered as declared) from the
// other containers.
func splitSidecars(pod *corev1.Pod, cs []*podstate.Container) (others, sidecars []*podstate.Container) {
	if pod == nil {
		return cs, nil
	}
	rank := map[string]int{}
	for i := range pod.Spec.InitContainers {
		if qos.IsRestartable(&pod.Spec.InitContainers[i]) {
			rank[pod.Spec.InitContainers[i].Name] = len(rank) + 1
		}
	}
	bySlot := make([][]*podstate.Container, len(rank)+1)
	for _, c := range cs {
		if r := rank[c.Name]; r > 0 && c.Init {
			bySlot[r] = append(bySlot[r], c)
		} else {
			others = append(others, c)
		}
	}
	for _, slot := range bySlot {
		sidecars = append(sidecars, slot...)
	}
	return others, sidecars
}
