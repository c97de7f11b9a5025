package syncer

import (
	"context"
	"errors"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/podstate"
	"github.com/podhost/podhost/internal/qos"
)

// minSidecarGrace is the least grace a sidecar gets when the regular
// containers used up the pod's (the kubelet's minimumGracePeriodInSeconds).
const minSidecarGrace = 2 * time.Second

// stopPodContainers stops a pod's running containers in the kubelet's
// termination order (kuberuntime's newTerminationOrdering): the app
// containers and the regular init containers in parallel, then the sidecars
// one by one in reverse order of declaration once the app containers (not
// the regular init containers: they are stopped alongside, never waited
// for) and the later sidecars are gone, each with what is left of grace (at
// least minSidecarGrace). It returns once every stop has ended.
func (s *Syncer) stopPodContainers(ctx context.Context, pod *corev1.Pod, cs []*podstate.Container, grace time.Duration) error {
	mains, inits, sidecars := terminationGroups(pod, cs)
	initsDone := make(chan error, 1)
	go func() { initsDone <- s.stopContainers(ctx, pod, inits, grace) }()
	err := s.stopMainsThenSidecars(ctx, pod, mains, sidecars, grace)
	return errors.Join(err, <-initsDone)
}

// stopMainsThenSidecars stops mains in parallel, then each sidecar, last
// first, with what is left of grace.
func (s *Syncer) stopMainsThenSidecars(ctx context.Context, pod *corev1.Pod, mains, sidecars []*podstate.Container, grace time.Duration) error {
	deadline := s.now().Add(grace)
	if err := s.stopContainers(ctx, pod, mains, grace); err != nil {
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

// terminationGroups separates running containers into the app containers
// (and any container without a pod spec: everything, for an orphan), the
// regular init containers and the sidecars (ordered as declared).
func terminationGroups(pod *corev1.Pod, cs []*podstate.Container) (mains, inits, sidecars []*podstate.Container) {
	if pod == nil {
		return cs, nil, nil
	}
	rank := map[string]int{}
	for i := range pod.Spec.InitContainers {
		if qos.IsRestartable(&pod.Spec.InitContainers[i]) {
			rank[pod.Spec.InitContainers[i].Name] = len(rank) + 1
		}
	}
	bySlot := make([][]*podstate.Container, len(rank)+1)
	for _, c := range cs {
		switch r := rank[c.Name]; {
		case c.Init && r > 0:
			bySlot[r] = append(bySlot[r], c)
		case c.Init:
			inits = append(inits, c)
		default:
			mains = append(mains, c)
		}
	}
	for _, slot := range bySlot {
		sidecars = append(sidecars, slot...)
	}
	return mains, inits, sidecars
}
