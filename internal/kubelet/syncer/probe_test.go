package syncer

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/kubelet/prober"
)

// The Killing messages of probe kills, word for word the kubelet's:
// computePodActions for app containers, computeInitContainerActions for
// sidecars (no ", will be restarted", whatever the pod's policy).
func TestKillMessage(t *testing.T) {
	for _, tc := range []struct {
		policy    corev1.RestartPolicy
		container string
		probe     string
		want      string
	}{
		{corev1.RestartPolicyAlways, "a", prober.ReasonLiveness, "Container a failed liveness probe, will be restarted"},
		{corev1.RestartPolicyOnFailure, "a", prober.ReasonStartup, "Container a failed startup probe, will be restarted"},
		{corev1.RestartPolicyNever, "a", prober.ReasonLiveness, "Container a failed liveness probe"},
		{corev1.RestartPolicyAlways, "s1", prober.ReasonLiveness, "Init container s1 failed liveness probe"},
		{corev1.RestartPolicyNever, "s2", prober.ReasonStartup, "Init container s2 failed startup probe"},
	} {
		pod := sidecarWorldPod(tc.policy)
		if got := killMessage(pod, tc.container, tc.probe); got != tc.want {
			t.Errorf("%s %s %s: %q, want %q", tc.policy, tc.container, tc.probe, got, tc.want)
		}
	}
}
