package syncer

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/podstate"
)

// Prober runs the containers' liveness, readiness and startup probes
// (internal/prober.Manager).
type Prober interface {
	// Sync tells the prober which containers run and the IP to probe.
	Sync(pod *corev1.Pod, running *podstate.Pod, podIP string)
	// Results: readiness and started overrides for running containers.
	Results(uid types.UID) (ready, started map[string]bool)
	// StopLivenessAndStartup: the pod is terminating (until Forget).
	StopLivenessAndStartup(uid types.UID)
	Forget(uid types.UID)
}

// noProber is the Prober of a Syncer built without one.
type noProber struct{}

func (noProber) Sync(*corev1.Pod, *podstate.Pod, string)            {}
func (noProber) Results(types.UID) (ready, started map[string]bool) { return nil, nil }
func (noProber) StopLivenessAndStartup(types.UID)                   {}
func (noProber) Forget(types.UID)                                   {}

// probeResults hands the observed pod to the prober and returns its
// readiness and started results for status.
func (s *Syncer) probeResults(pod *corev1.Pod, running *podstate.Pod, ips []string) (ready, started map[string]bool) {
	ip := ""
	if len(ips) > 0 {
		ip = ips[0]
	}
	s.prober.Sync(pod, running, ip)
	return s.prober.Results(pod.UID)
}

// KillContainer stops a container that failed its liveness or startup probe
// (reason "liveness" or "startup"), as the kubelet: a Killing event, the
// probe's terminationGracePeriodSeconds or else the pod's, then a sync, in
// which the restart policy applies. A container that no longer runs, or a
// pod no longer desired (terminating anyway), is left alone.
func (s *Syncer) KillContainer(ctx context.Context, pod *corev1.Pod, containerID, containerName, reason string) error {
	if !s.obs.IsDesired(pod.UID) {
		return nil
	}
	running, err := s.runtimePod(ctx, pod.UID)
	if err != nil {
		return fmt.Errorf("kill container %s: %w", containerName, err)
	}
	alive := false
	for _, c := range running.Containers {
		alive = alive || (c.ID == containerID && c.State == podstate.StateRunning)
	}
	if !alive {
		return nil
	}
	msg := fmt.Sprintf("Container %s failed %s probe", containerName, reason)
	if pod.Spec.RestartPolicy != corev1.RestartPolicyNever {
		msg += ", will be restarted"
	}
	s.obs.Event(pod.UID, corev1.EventTypeNormal, "Killing", msg)
	s.podLog(pod).Info("killing container", "container", containerName, "id", containerID, "reason", msg)
	if err := s.rt.StopContainer(ctx, containerID, probeGracePeriod(pod, containerName, reason)); err != nil {
		return fmt.Errorf("kill container %s: %w", containerName, err)
	}
	if s.waker != nil {
		s.waker.Wake(pod.UID)
	}
	return nil
}

// probeGracePeriod is the failed probe's terminationGracePeriodSeconds if
// set, else the pod's grace period.
func probeGracePeriod(pod *corev1.Pod, containerName, reason string) time.Duration {
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		if c.Name != containerName {
			continue
		}
		p := c.LivenessProbe
		if reason == "startup" {
			p = c.StartupProbe
		}
		if p != nil && p.TerminationGracePeriodSeconds != nil {
			return time.Duration(*p.TerminationGracePeriodSeconds) * time.Second
		}
	}
	return gracePeriod(pod, nil)
}
