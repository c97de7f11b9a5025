package status

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/model/podstate"
)

// Each exited instance's termination message (read by the runtime) is its
// terminated state's message: the newest in state, the previous in lastState.
func TestComputeTerminationMessage(t *testing.T) {
	first, second := rc("app", 1, podstate.StateExited, 1), rc("app", 2, podstate.StateExited, 1)
	first.Message, second.Message = "bye-1", "bye-2"
	s := Compute(testPod(corev1.RestartPolicyNever), ready(Inputs{Running: runtimePod(first, second), Now: now}))
	st := s.ContainerStatuses[0]
	eq(t, "state message", st.State.Terminated.Message, "bye-2")
	eq(t, "last message", st.LastTerminationState.Terminated.Message, "bye-1")

	third := rc("app", 3, podstate.StateRunning, 0)
	s = Compute(testPod(corev1.RestartPolicyAlways), ready(Inputs{Running: runtimePod(second, third), Now: now}))
	eq(t, "running: last message", s.ContainerStatuses[0].LastTerminationState.Terminated.Message, "bye-2")
}
