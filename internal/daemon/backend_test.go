package daemon

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/api"
	"github.com/podhost/podhost/internal/podview"
)

func TestRunningContainerID(t *testing.T) {
	pod := &corev1.Pod{}
	pod.Name = "web"
	pod.Spec.InitContainers = []corev1.Container{{Name: "init"}}
	pod.Spec.Containers = []corev1.Container{{Name: "main"}, {Name: "side"}, {Name: "new"}}
	pod.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "init", ContainerID: "containerd://i1",
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Completed"}}}}
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{
		{Name: "main", ContainerID: "containerd://m1", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
		{Name: "side", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}},
	}
	for _, tc := range []struct {
		container, id, err string
		sentinel           error
	}{
		{container: "main", id: "m1"},
		{container: "", id: "m1"}, // kubectl's default: the first app container
		{container: "nope", err: "container nope is not valid for pod web", sentinel: api.ErrNotFound},
		{container: "side", err: "container side is not running (state: waiting: CrashLoopBackOff)", sentinel: api.ErrConflict},
		{container: "init", err: "container init is not running (state: terminated: Completed, exit code 0)", sentinel: api.ErrConflict},
		{container: "new", err: "container new is not running (state: not created)", sentinel: api.ErrConflict},
	} {
		id, err := runningContainerID(pod, tc.container)
		switch {
		case tc.err == "" && (err != nil || id != tc.id):
			t.Errorf("%q: %q, %v; want %q", tc.container, id, err, tc.id)
		case tc.err != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.err)):
			t.Errorf("%q: error %v, want %q", tc.container, err, tc.err)
		case tc.sentinel != nil && !errors.Is(err, tc.sentinel):
			t.Errorf("%q: %v does not match %v", tc.container, err, tc.sentinel)
		}
	}
	pod.Spec.Containers = pod.Spec.Containers[:1]
	if id, err := runningContainerID(pod, ""); err != nil || id != "m1" {
		t.Errorf("the only container: %q, %v", id, err)
	}
	pod.Annotations = map[string]string{podview.DefaultContainerAnnotation: "init"}
	if _, err := runningContainerID(pod, ""); err == nil || !strings.HasPrefix(err.Error(), "container init is not running") {
		t.Errorf("the annotation's container: %v", err)
	}
}

// A container that waits and never ran has no log (the kubelet's
// validateContainerLogStatus); a follow lasts while its attempt runs.
func TestLogStatus(t *testing.T) {
	pod := &corev1.Pod{}
	pod.Name = "web"
	pod.Status.InitContainerStatuses = []corev1.ContainerStatus{
		{Name: "init", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Completed"}}}}
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{
		{Name: "new", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}},
		{Name: "crashing", RestartCount: 2, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1}}},
		{Name: "main", RestartCount: 1, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
	}
	for _, tc := range []struct {
		name, err string
		attempt   int
		running   bool
	}{
		{name: "new", err: `container "new" in pod "web" is waiting to start: ContainerCreating`},
		{name: "crashing", attempt: 2},            // its last run's log
		{name: "init"},                            // terminated: its log, not followed
		{name: "main", attempt: 1, running: true}, // the running attempt
		{name: "main", attempt: 0},                // an earlier attempt: its follow ends
		{name: "unknown"},                         // no status yet: as before, no error
	} {
		err := waitingToStart(pod, tc.name)
		if (err == nil) != (tc.err == "") || (err != nil && err.Error() != tc.err) {
			t.Errorf("%s: waitingToStart = %v, want %q", tc.name, err, tc.err)
		}
		if got := attemptRunning(pod, tc.name, tc.attempt); got != tc.running {
			t.Errorf("%s attempt %d: running = %v, want %v", tc.name, tc.attempt, got, tc.running)
		}
	}
}
