package rollout

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func readyCond(s corev1.ConditionStatus, reason string) corev1.PodCondition {
	return corev1.PodCondition{Type: corev1.PodReady, Status: s, Reason: reason}
}

func readyAt(at time.Time) corev1.PodCondition {
	return corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(at)}
}

func waiting(name, reason, msg string) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}}
}

func TestDecide(t *testing.T) {
	t0 := time.Unix(1700000000, 0)
	notReady := &corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{readyCond(corev1.ConditionFalse, "ContainersNotReady")}}
	cases := []struct {
		name  string
		check Check
		want  Decision
	}{
		{"ready closes the window", Check{Window: time.Minute, Seen: t0, Now: t0.Add(time.Hour), HasPrevious: true,
			Status: &corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{readyCond(corev1.ConditionTrue, "")}}},
			Decision{Verdict: Ready}},
		{"succeeded counts as good", Check{Window: time.Minute, Seen: t0, Now: t0.Add(time.Hour), HasPrevious: true,
			Status: &corev1.PodStatus{Phase: corev1.PodSucceeded}}, Decision{Verdict: Ready}},
		{"ready without a window is still recorded", Check{Status: &corev1.PodStatus{Conditions: []corev1.PodCondition{readyCond(corev1.ConditionTrue, "")}}},
			Decision{Verdict: Ready}},
		{"ready for an instant (crash loop without a readiness probe)", Check{Window: 5 * time.Second, Seen: t0, Now: t0.Add(2 * time.Second), HasPrevious: true,
			Status: &corev1.PodStatus{Conditions: []corev1.PodCondition{readyAt(t0.Add(1500 * time.Millisecond))}}},
			Decision{Verdict: Wait, After: 2 * time.Second}},
		{"ready long enough", Check{Window: 5 * time.Second, Seen: t0, Now: t0.Add(4 * time.Second), HasPrevious: true,
			Status: &corev1.PodStatus{Conditions: []corev1.PodCondition{readyAt(t0.Add(1500 * time.Millisecond))}}},
			Decision{Verdict: Ready}},
		{"ready at the end of the window, not yet long enough", Check{Window: 5 * time.Second, Seen: t0, Now: t0.Add(6 * time.Second), HasPrevious: true,
			Status: &corev1.PodStatus{Conditions: []corev1.PodCondition{readyAt(t0.Add(5 * time.Second))}}},
			Decision{Verdict: Wait, After: 1500 * time.Millisecond}},
		{"minimum Ready time capped", Check{Window: time.Hour, Seen: t0, Now: t0.Add(11 * time.Second), HasPrevious: true,
			Status: &corev1.PodStatus{Conditions: []corev1.PodCondition{readyAt(t0.Add(time.Second))}}},
			Decision{Verdict: Ready}},
		{"no window: wait forever", Check{Seen: t0, Now: t0.Add(time.Hour), HasPrevious: true, Status: notReady},
			Decision{Verdict: Wait}},
		{"nothing to come back to", Check{Window: time.Minute, Seen: t0, Now: t0.Add(time.Hour), Status: notReady},
			Decision{Verdict: Wait}},
		{"window open", Check{Window: time.Minute, Seen: t0, Now: t0.Add(20 * time.Second), HasPrevious: true, Status: notReady},
			Decision{Verdict: Wait, After: 40 * time.Second}},
		{"window over, no status", Check{Window: time.Minute, Seen: t0, Now: t0.Add(time.Minute), HasPrevious: true},
			Decision{Verdict: RollBack, Reason: "NotReady", Message: "not Ready within 1m0s (no status yet)"}},
		{"image pull back-off", Check{Window: 5 * time.Second, Seen: t0, Now: t0.Add(6 * time.Second), HasPrevious: true,
			Status: &corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{
				waiting("a", "ContainerCreating", ""), waiting("b", "ImagePullBackOff", `Back-off pulling image "nope"`)}}},
			Decision{Verdict: RollBack, Reason: "ImagePullBackOff", Message: `not Ready within 5s (container b: ImagePullBackOff: Back-off pulling image "nope")`}},
		{"crash loop", Check{Window: 5 * time.Second, Seen: t0, Now: t0.Add(5 * time.Second), HasPrevious: true,
			Status: &corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{waiting("app", "CrashLoopBackOff", "")}}},
			Decision{Verdict: RollBack, Reason: "CrashLoopBackOff", Message: "not Ready within 5s (container app: CrashLoopBackOff)"}},
		{"init container config error", Check{Window: time.Second, Seen: t0, Now: t0.Add(time.Second), HasPrevious: true,
			Status: &corev1.PodStatus{InitContainerStatuses: []corev1.ContainerStatus{waiting("init", "CreateContainerConfigError", `configmap "x" not found`)}}},
			Decision{Verdict: RollBack, Reason: "CreateContainerConfigError", Message: `not Ready within 1s (container init: CreateContainerConfigError: configmap "x" not found)`}},
		{"exited between restarts", Check{Window: time.Second, Seen: t0, Now: t0.Add(time.Second), HasPrevious: true,
			Status: &corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "app",
				State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1}}}}}},
			Decision{Verdict: RollBack, Reason: "Error", Message: "not Ready within 1s (container app exited with code 1)"}},
		{"rejected at admission", Check{Window: time.Second, Seen: t0, Now: t0.Add(time.Second), HasPrevious: true,
			Status: &corev1.PodStatus{Phase: corev1.PodFailed, Reason: "OutOfcpu", Message: "Node didn't have enough resource: cpu"}},
			Decision{Verdict: RollBack, Reason: "OutOfcpu", Message: "not Ready within 1s (OutOfcpu: Node didn't have enough resource: cpu)"}},
		{"readiness failing", Check{Window: time.Second, Seen: t0, Now: t0.Add(time.Second), HasPrevious: true, Status: notReady},
			Decision{Verdict: RollBack, Reason: "ContainersNotReady", Message: "not Ready within 1s (ContainersNotReady)"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Decide(tc.check); got != tc.want {
				t.Errorf("Decide = %+v\nwant     %+v", got, tc.want)
			}
		})
	}
}
