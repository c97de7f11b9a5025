package syncer

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/kubelet/prober"
	"github.com/podhost/podhost/internal/model/podstate"
	"github.com/podhost/podhost/internal/model/qos"
)

// Prober runs the containers' liveness, readiness and startup probes and
// keeps their results (internal/kubelet/prober.Manager). It never acts on a pod:
// SyncPod reads Results and kills unhealthy containers itself.
type Prober interface {
	// Sync tells the prober which containers run and the IP to probe.
	Sync(pod *corev1.Pod, running *podstate.Pod, podIP string)
	Results(uid types.UID) prober.PodResults
	// StopLivenessAndStartup: the pod is terminating (until Forget).
	StopLivenessAndStartup(uid types.UID)
	Forget(uid types.UID)
}

// noProber is the Prober of a Syncer built without one.
type noProber struct{}

func (noProber) Sync(*corev1.Pod, *podstate.Pod, string) {}
func (noProber) Results(types.UID) prober.PodResults     { return prober.PodResults{} }
func (noProber) StopLivenessAndStartup(types.UID)        {}
func (noProber) Forget(types.UID)                        {}

// probeResults hands the observed pod to the prober and returns its
// readiness and started results for status.
func (s *Syncer) probeResults(pod *corev1.Pod, running *podstate.Pod, ips []string) (ready, started map[string]bool) {
	ip := ""
	if len(ips) > 0 {
		ip = ips[0]
	}
	s.prober.Sync(pod, running, ip)
	r := s.prober.Results(pod.UID)
	return r.Ready, r.Started
}

// unhealthyOf returns the prober's failed liveness and startup probes.
func unhealthyOf(r prober.PodResults) map[string]probeFailure {
	if len(r.Unhealthy) == 0 {
		return nil
	}
	out := make(map[string]probeFailure, len(r.Unhealthy))
	for name, u := range r.Unhealthy {
		out[name] = probeFailure{ContainerID: u.ContainerID, Probe: u.Reason}
	}
	return out
}

// killUnhealthy stops containers whose liveness or startup probe failed, as
// the kubelet: a Killing event (killMessage), the probe's
// terminationGracePeriodSeconds or else the pod's; the caller then plans
// again with them as killed (observation.Killed): unless the policy is
// Never they restart in the same sync, whatever their exit code.
func (s *Syncer) killUnhealthy(ctx context.Context, pod *corev1.Pod, kills []unhealthyKill) error {
	for _, k := range kills {
		msg := killMessage(pod, k.Container.Name, k.Probe)
		s.podLog(pod).Info("killing container", "container", k.Container.Name, "id", k.Container.ID, "reason", msg)
		if err := s.stopContainer(ctx, pod, k.Container, probeGracePeriod(pod, k.Container.Name, k.Probe), msg); err != nil {
			return fmt.Errorf("kill unhealthy container %s: %w", k.Container.Name, err)
		}
	}
	return nil
}

// killedIDs: the killed container instances, ID by container name.
func killedIDs(kills []unhealthyKill) map[string]string {
	out := make(map[string]string, len(kills))
	for _, k := range kills {
		out[k.Container.Name] = k.Container.ID
	}
	return out
}

// killMessage is the kubelet's Killing message for a failed probe: a
// sidecar's is computeInitContainerActions' "Init container <name> failed
// <probe> probe"; an app container's is computePodActions' "Container
// <name> failed <probe> probe", with ", will be restarted" unless the
// pod's restartPolicy is Never.
func killMessage(pod *corev1.Pod, name, probe string) string {
	if isSidecar(pod, name) {
		return fmt.Sprintf("Init container %s failed %s probe", name, probe)
	}
	msg := fmt.Sprintf("Container %s failed %s probe", name, probe)
	if pod.Spec.RestartPolicy != corev1.RestartPolicyNever {
		msg += ", will be restarted"
	}
	return msg
}

// probeGracePeriod is the failed probe's terminationGracePeriodSeconds if
// set, else the pod's grace period.
func probeGracePeriod(pod *corev1.Pod, containerName, probe string) time.Duration {
	for _, c := range allContainers(pod) {
		if c.Name != containerName {
			continue
		}
		p := c.LivenessProbe
		if probe == prober.ReasonStartup {
			p = c.StartupProbe
		}
		if p != nil && p.TerminationGracePeriodSeconds != nil {
			return time.Duration(*p.TerminationGracePeriodSeconds) * time.Second
		}
	}
	return gracePeriod(pod, nil)
}

// isSidecar: name is a restartable init container of pod.
func isSidecar(pod *corev1.Pod, name string) bool {
	for i := range pod.Spec.InitContainers {
		if c := &pod.Spec.InitContainers[i]; c.Name == name {
			return qos.IsRestartable(c)
		}
	}
	return false
}
