package syncer

// In-place resize (the kubelet's doPodResizeAction): the worker's pod
// carries the allocated resources (the manager admitted them and wrote the
// allocation checkpoint first); a running container whose actuated
// resources (its podhost.io/resources label) differ is updated live. The
// pod cgroup follows the allocated pod at the top of every SyncPod
// (EnsurePod), so an increase is made on the pod before its containers; a
// memory limit below current usage is never written (it would OOM-kill):
// the resize stays in progress with an error and is retried.

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/host/cgroups"
	"github.com/podhost/podhost/internal/host/spec"
	"github.com/podhost/podhost/internal/kubelet/resize"
	"github.com/podhost/podhost/internal/model/podstate"
	"github.com/podhost/podhost/internal/model/qos"
	"github.com/podhost/podhost/internal/model/wellknown"
)

// resizeRetry is how soon a resize that failed (memory below usage, a
// runtime error) is tried again.
const resizeRetry = 5 * time.Second

// podCgroupResources are the pod cgroup limits for the allocated pod,
// except a memory limit decrease below the pod's current usage, which
// keeps the actuated limit (the kubelet aborts such a resize).
func (s *Syncer) podCgroupResources(pod *corev1.Pod, running *podstate.Pod) cgroups.Resources {
	target := cgroups.PodResources(pod)
	if target.MemoryLimit == 0 || len(running.Running()) == 0 {
		return target
	}
	cur := cgroups.PodResources(actuatedPod(pod, running))
	if cur.MemoryLimit != 0 && target.MemoryLimit >= cur.MemoryLimit {
		return target
	}
	st, err := s.cg.PodStats(pod.UID, qos.PodQOS(pod))
	if err != nil || st.MemoryUsage < uint64(target.MemoryLimit) {
		return target
	}
	s.setResizeError(pod.UID, fmt.Sprintf("aborting attempt to set pod memory limit (%d) less than current memory usage (%d)", target.MemoryLimit, st.MemoryUsage))
	target.MemoryLimit = cur.MemoryLimit
	return target
}

// actuatedPod is pod with each running container's actuated resources.
func actuatedPod(pod *corev1.Pod, running *podstate.Pod) *corev1.Pod {
	alloc := map[string]corev1.ResourceRequirements{}
	for _, c := range running.Running() {
		if r, ok := resize.Actuated(c); ok {
			alloc[c.Name] = r
		}
	}
	return resize.WithAllocation(pod, alloc)
}

// resizeContainers updates each container's cgroups live; the first
// failure is kept for the status (PodResizeInProgress, reason Error) and
// the resize is retried after resizeRetry.
func (s *Syncer) resizeContainers(ctx context.Context, pod *corev1.Pod, todo []containerResize, rq *requeue) error {
	var first error
	for _, r := range todo {
		if err := s.resizeContainer(ctx, pod, r); err != nil {
			s.obs.Event(pod.UID, corev1.EventTypeWarning, "ResizeFailed", err.Error())
			if first == nil {
				first = err
			}
		}
	}
	if first != nil {
		s.setResizeError(pod.UID, first.Error())
		rq.after(resizeRetry)
	}
	return first
}

// resizeContainer refuses a memory limit below the container's usage, then
// has the runtime update the task and record the actuated resources.
func (s *Syncer) resizeContainer(ctx context.Context, pod *corev1.Pod, r containerResize) error {
	want := r.Spec.Resources
	if lim := want.Limits.Memory().Value(); lim > 0 {
		st, err := s.cg.ContainerStats(pod.UID, qos.PodQOS(pod), r.Container.ID)
		if err == nil && st.MemoryUsage >= uint64(lim) {
			return fmt.Errorf("resize container %s: aborting attempt to set memory limit (%d) less than current memory usage (%d)", r.Spec.Name, lim, st.MemoryUsage)
		}
	}
	res := spec.LinuxResources(want, s.cfg.HostLimits)
	labels := map[string]string{wellknown.LabelResources: resize.Label(want)}
	if err := s.rt.UpdateContainerResources(ctx, r.Container.ID, res, labels); err != nil {
		return fmt.Errorf("resize container %s: %w", r.Spec.Name, err)
	}
	s.podLog(pod).Info("container resized in place", "container", r.Spec.Name, "id", r.Container.ID, "resources", labels[wellknown.LabelResources])
	s.obs.Event(pod.UID, corev1.EventTypeNormal, "ResizeCompleted",
		fmt.Sprintf("Container %s resized in place: %s", r.Spec.Name, labels[wellknown.LabelResources]))
	return nil
}

func (s *Syncer) setResizeError(uid types.UID, msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.resizeErr[uid] = msg
}

// takeResizeError returns and clears the pod's last resize error.
func (s *Syncer) takeResizeError(uid types.UID) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	msg := s.resizeErr[uid]
	delete(s.resizeErr, uid)
	return msg
}
