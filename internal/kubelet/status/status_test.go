package status

import (
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podhost/podhost/internal/model/podstate"
)

var (
	t0  = time.Date(2025, 1, 1, 10, 0, 0, 0, time.UTC)
	now = t0.Add(time.Hour)
)

func testPod(policy corev1.RestartPolicy, inits ...string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-1"},
		Spec: corev1.PodSpec{
			RestartPolicy: policy,
			Containers:    []corev1.Container{{Name: "app", Image: "nginx:1"}},
		},
	}
	for _, n := range inits {
		p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: n, Image: "busybox"})
	}
	return p
}

func withSidecar(p *corev1.Pod, name string) *corev1.Pod {
	always := corev1.ContainerRestartPolicyAlways
	p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: name, Image: "proxy", RestartPolicy: &always})
	return p
}

// rc is a runtime container: attempt n of name in the given state.
func rc(name string, attempt int, state podstate.ContainerState, exit int32) *podstate.Container {
	c := &podstate.Container{
		ID: name + "-" + string(rune('0'+attempt)), Name: name, Attempt: attempt, RestartCount: attempt,
		Image: "nginx:1", ImageRef: "docker.io/library/nginx@sha256:abc", State: state,
		CreatedAt: t0.Add(time.Duration(attempt) * time.Minute), ExitCode: exit,
	}
	if state != podstate.StateCreated {
		c.StartedAt = c.CreatedAt.Add(time.Second)
	}
	if state == podstate.StateExited {
		c.FinishedAt = c.StartedAt.Add(time.Second)
	}
	return c
}

func runtimePod(cs ...*podstate.Container) *podstate.Pod {
	return &podstate.Pod{UID: "uid-1", Name: "web", Namespace: "default", Containers: cs}
}

func ready(in Inputs) Inputs {
	in.SandboxReady, in.PodIPs, in.HostIP = true, []string{"10.88.0.5"}, "192.168.1.2"
	return in
}

func cond(s corev1.PodStatus, t corev1.PodConditionType) corev1.PodCondition {
	for _, c := range s.Conditions {
		if c.Type == t {
			return c
		}
	}
	return corev1.PodCondition{}
}

func waitingReason(st corev1.ContainerStatus) string {
	if st.State.Waiting == nil {
		return "<not waiting>"
	}
	return st.State.Waiting.Reason
}

func terminatedReason(s corev1.ContainerState) string {
	if s.Terminated == nil {
		return "<not terminated>"
	}
	return s.Terminated.Reason
}

func eq[T any](t *testing.T, what string, got, want T) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

func TestComputeNothingYet(t *testing.T) {
	s := Compute(testPod(corev1.RestartPolicyAlways), Inputs{Now: now})
	eq(t, "phase", s.Phase, corev1.PodPending)
	eq(t, "qos", s.QOSClass, corev1.PodQOSBestEffort)
	eq(t, "start", s.StartTime.Time, now)
	eq(t, "app", waitingReason(s.ContainerStatuses[0]), ContainerCreating)
	eq(t, "image", s.ContainerStatuses[0].Image, "nginx:1")
	var types []corev1.PodConditionType
	for _, c := range s.Conditions {
		types = append(types, c.Type)
		eq(t, string(c.Type)+" time", c.LastTransitionTime.Time, now)
	}
	eq(t, "condition order", types, []corev1.PodConditionType{
		corev1.PodReadyToStartContainers, corev1.PodInitialized, corev1.PodReady, corev1.ContainersReady, corev1.PodScheduled,
	})
	eq(t, "sandbox", cond(s, corev1.PodReadyToStartContainers).Status, corev1.ConditionFalse)
	eq(t, "initialized", cond(s, corev1.PodInitialized).Status, corev1.ConditionTrue)
	eq(t, "ready", cond(s, corev1.PodReady), corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse,
		Reason: ContainersNotReady, Message: "containers with unready status: [app]", LastTransitionTime: metav1.NewTime(now)})
	eq(t, "scheduled", cond(s, corev1.PodScheduled).Status, corev1.ConditionTrue)
}

func TestComputeRunning(t *testing.T) {
	app := rc("app", 2, podstate.StateRunning, 0)
	s := Compute(testPod(corev1.RestartPolicyAlways), ready(Inputs{Running: runtimePod(app), Now: now}))
	eq(t, "phase", s.Phase, corev1.PodRunning)
	st := s.ContainerStatuses[0]
	eq(t, "status", st, corev1.ContainerStatus{
		Name: "app", Image: "nginx:1", ImageID: "docker.io/library/nginx@sha256:abc",
		ContainerID: "containerd://app-2", RestartCount: 2, Ready: true, Started: ptr(true),
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(app.StartedAt)}},
	})
	eq(t, "ready", cond(s, corev1.PodReady).Status, corev1.ConditionTrue)
	eq(t, "containers ready", cond(s, corev1.ContainersReady).Status, corev1.ConditionTrue)
	eq(t, "sandbox", cond(s, corev1.PodReadyToStartContainers).Status, corev1.ConditionTrue)
	eq(t, "podIP", s.PodIP, "10.88.0.5")
	eq(t, "podIPs", s.PodIPs, []corev1.PodIP{{IP: "10.88.0.5"}})
	eq(t, "hostIPs", s.HostIPs, []corev1.HostIP{{IP: "192.168.1.2"}})

	notReady := Compute(testPod(corev1.RestartPolicyAlways), ready(Inputs{Running: runtimePod(app), Ready: map[string]bool{"app": false}, Now: now}))
	eq(t, "probe says not ready", notReady.ContainerStatuses[0].Ready, false)
	eq(t, "pod not ready", cond(notReady, corev1.PodReady).Reason, ContainersNotReady)

	// A startup probe that has not succeeded: not started, so not ready
	// whatever the readiness probe says.
	notStarted := Compute(testPod(corev1.RestartPolicyAlways), ready(Inputs{Running: runtimePod(app),
		Ready: map[string]bool{"app": true}, Started: map[string]bool{"app": false}, Now: now}))
	eq(t, "not started", *notStarted.ContainerStatuses[0].Started, false)
	eq(t, "not started, not ready", notStarted.ContainerStatuses[0].Ready, false)
	started := Compute(testPod(corev1.RestartPolicyAlways), ready(Inputs{Running: runtimePod(app),
		Started: map[string]bool{"app": true}, Now: now}))
	eq(t, "started", *started.ContainerStatuses[0].Started, true)
	eq(t, "started, no readiness probe: ready", started.ContainerStatuses[0].Ready, true)
}

func ptr[T any](v T) *T { return &v }

func TestComputePhases(t *testing.T) {
	exited := func(code int32, reason string) *podstate.Container {
		c := rc("app", 0, podstate.StateExited, code)
		c.Reason = reason
		return c
	}
	tests := []struct {
		name       string
		pod        *corev1.Pod
		running    []*podstate.Container
		waiting    map[string]Reason
		terminal   bool
		phase      corev1.PodPhase
		state      string // waiting or terminated reason of app
		readyCause string
	}{
		{"never, success", testPod(corev1.RestartPolicyNever), []*podstate.Container{exited(0, "")}, nil, false,
			corev1.PodSucceeded, Completed, PodCompleted},
		{"never, failure", testPod(corev1.RestartPolicyNever), []*podstate.Container{exited(2, "")}, nil, false,
			corev1.PodFailed, Error, PodFailed},
		{"on failure, success", testPod(corev1.RestartPolicyOnFailure), []*podstate.Container{exited(0, "")}, nil, false,
			corev1.PodSucceeded, Completed, PodCompleted},
		{"on failure, failure restarts", testPod(corev1.RestartPolicyOnFailure), []*podstate.Container{exited(1, "")}, nil, false,
			corev1.PodRunning, Error, ContainersNotReady},
		{"always, oom restarts", testPod(corev1.RestartPolicyAlways), []*podstate.Container{exited(137, OOMKilled)}, nil, false,
			corev1.PodRunning, OOMKilled, ContainersNotReady},
		{"always but terminal", testPod(corev1.RestartPolicyAlways), []*podstate.Container{exited(0, "")}, nil, true,
			corev1.PodSucceeded, Completed, PodCompleted},
		{"crash loop", testPod(corev1.RestartPolicyAlways), []*podstate.Container{exited(1, "")},
			map[string]Reason{"app": {CrashLoopBackOff, "back-off 10s"}}, false, corev1.PodRunning, CrashLoopBackOff, ContainersNotReady},
		{"never ignores waiting reason", testPod(corev1.RestartPolicyNever), []*podstate.Container{exited(1, "")},
			map[string]Reason{"app": {CrashLoopBackOff, ""}}, false, corev1.PodFailed, Error, PodFailed},
		{"image pull error", testPod(corev1.RestartPolicyAlways), nil,
			map[string]Reason{"app": {ErrImagePull, "not found"}}, false, corev1.PodPending, ErrImagePull, ContainersNotReady},
		{"image pull back-off", testPod(corev1.RestartPolicyAlways), nil,
			map[string]Reason{"app": {ImagePullBackOff, ""}}, false, corev1.PodPending, ImagePullBackOff, ContainersNotReady},
		{"never pull", testPod(corev1.RestartPolicyAlways), nil,
			map[string]Reason{"app": {ErrImageNeverPull, ""}}, false, corev1.PodPending, ErrImageNeverPull, ContainersNotReady},
		{"create error", testPod(corev1.RestartPolicyAlways), nil,
			map[string]Reason{"app": {CreateContainerError, ""}}, false, corev1.PodPending, CreateContainerError, ContainersNotReady},
		{"created not started", testPod(corev1.RestartPolicyAlways), []*podstate.Container{rc("app", 0, podstate.StateCreated, 0)}, nil, false,
			corev1.PodPending, ContainerCreating, ContainersNotReady},
		{"init running", testPod(corev1.RestartPolicyAlways, "init"), []*podstate.Container{rc("init", 0, podstate.StateRunning, 0)}, nil, false,
			corev1.PodPending, PodInitializing, ContainersNotReady},
		{"init failed, never", testPod(corev1.RestartPolicyNever, "init"), []*podstate.Container{rc("init", 0, podstate.StateExited, 1)}, nil, false,
			corev1.PodFailed, PodInitializing, PodFailed},
		{"init failed, always", testPod(corev1.RestartPolicyAlways, "init"), []*podstate.Container{rc("init", 0, podstate.StateExited, 1)},
			map[string]Reason{"init": {CrashLoopBackOff, ""}}, false, corev1.PodPending, PodInitializing, ContainersNotReady},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := ready(Inputs{Running: runtimePod(tt.running...), Waiting: tt.waiting, Terminal: tt.terminal, Now: now})
			s := Compute(tt.pod, in)
			eq(t, "phase", s.Phase, tt.phase)
			st := s.ContainerStatuses[0]
			got := waitingReason(st)
			if st.State.Terminated != nil {
				got = st.State.Terminated.Reason
			}
			eq(t, "app state", got, tt.state)
			eq(t, "ready reason", cond(s, corev1.PodReady).Reason, tt.readyCause)
		})
	}
}

func TestComputeCrashLoopLastState(t *testing.T) {
	first, second := rc("app", 1, podstate.StateExited, 1), rc("app", 2, podstate.StateExited, 2)
	in := ready(Inputs{Running: runtimePod(first, second), Waiting: map[string]Reason{"app": {CrashLoopBackOff, "back-off"}}, Now: now})
	s := Compute(testPod(corev1.RestartPolicyAlways), in)
	st := s.ContainerStatuses[0]
	eq(t, "waiting", *st.State.Waiting, corev1.ContainerStateWaiting{Reason: CrashLoopBackOff, Message: "back-off"})
	eq(t, "last exit", st.LastTerminationState.Terminated.ExitCode, int32(2))
	eq(t, "last id", st.LastTerminationState.Terminated.ContainerID, "containerd://app-2")
	eq(t, "restarts", st.RestartCount, int32(2))

	// The runtime kept both attempts, the newest running: last state is the
	// previous attempt.
	third := rc("app", 3, podstate.StateRunning, 0)
	s = Compute(testPod(corev1.RestartPolicyAlways), ready(Inputs{Running: runtimePod(second, third), Now: now}))
	eq(t, "running last", s.ContainerStatuses[0].LastTerminationState.Terminated.ContainerID, "containerd://app-2")
}

func TestComputeLastStateFromPrevious(t *testing.T) {
	prevLast := corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 3, Reason: Error, ContainerID: "containerd://app-1"}}
	prev := &corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{
		Name: "app", ContainerID: "containerd://app-1", RestartCount: 1, LastTerminationState: prevLast,
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: CrashLoopBackOff}},
	}}}
	s := Compute(testPod(corev1.RestartPolicyAlways), ready(Inputs{Running: runtimePod(rc("app", 2, podstate.StateRunning, 0)), Previous: prev, Now: now}))
	eq(t, "last from previous", s.ContainerStatuses[0].LastTerminationState, prevLast)

	prev.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 9, ContainerID: "containerd://app-1"}}
	s = Compute(testPod(corev1.RestartPolicyAlways), ready(Inputs{Running: runtimePod(rc("app", 2, podstate.StateRunning, 0)), Previous: prev, Now: now}))
	eq(t, "previous terminated state", s.ContainerStatuses[0].LastTerminationState.Terminated.ExitCode, int32(9))
}

func TestComputeLostContainer(t *testing.T) {
	prev := &corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{
		Name: "app", ContainerID: "containerd://app-0", RestartCount: 4,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
	}}}
	s := Compute(testPod(corev1.RestartPolicyAlways), ready(Inputs{Previous: prev, Now: now}))
	st := s.ContainerStatuses[0]
	eq(t, "last", terminatedReason(st.LastTerminationState), ContainerStatusUnknown)
	eq(t, "exit", st.LastTerminationState.Terminated.ExitCode, int32(137))
	eq(t, "restarts", st.RestartCount, int32(5))
	eq(t, "phase (stopped, restarting)", s.Phase, corev1.PodRunning)
}

func TestComputeInit(t *testing.T) {
	pod := testPod(corev1.RestartPolicyAlways, "init")
	done := rc("init", 0, podstate.StateExited, 0)
	app := rc("app", 0, podstate.StateRunning, 0)
	s := Compute(pod, ready(Inputs{Running: runtimePod(done, app), Now: now}))
	eq(t, "phase", s.Phase, corev1.PodRunning)
	eq(t, "init state", terminatedReason(s.InitContainerStatuses[0].State), Completed)
	eq(t, "init ready", s.InitContainerStatuses[0].Ready, true)
	eq(t, "initialized", cond(s, corev1.PodInitialized).Status, corev1.ConditionTrue)

	// The init container was removed after the pod initialized.
	s = Compute(pod, ready(Inputs{Running: runtimePod(app), Now: now}))
	eq(t, "inferred init", terminatedReason(s.InitContainerStatuses[0].State), Completed)
	eq(t, "phase", s.Phase, corev1.PodRunning)

	s = Compute(pod, ready(Inputs{Running: runtimePod(rc("init", 0, podstate.StateRunning, 0)), Now: now}))
	eq(t, "not initialized", cond(s, corev1.PodInitialized), corev1.PodCondition{Type: corev1.PodInitialized,
		Status: corev1.ConditionFalse, Reason: ContainersNotInitialized,
		Message: "containers with incomplete status: [init]", LastTransitionTime: metav1.NewTime(now)})
	eq(t, "app waits", waitingReason(s.ContainerStatuses[0]), PodInitializing)
}

func TestComputeSidecar(t *testing.T) {
	pod := withSidecar(testPod(corev1.RestartPolicyAlways), "proxy")
	proxy, app := rc("proxy", 0, podstate.StateRunning, 0), rc("app", 0, podstate.StateRunning, 0)
	s := Compute(pod, ready(Inputs{Running: runtimePod(proxy, app), Ready: map[string]bool{"proxy": false}, Now: now}))
	eq(t, "phase", s.Phase, corev1.PodRunning)
	eq(t, "initialized", cond(s, corev1.PodInitialized).Status, corev1.ConditionTrue)
	eq(t, "containers ready", cond(s, corev1.ContainersReady).Message, "containers with unready status: [proxy]")

	s = Compute(pod, ready(Inputs{Running: runtimePod(), Now: now}))
	eq(t, "pending", s.Phase, corev1.PodPending)
}

func TestComputeTerminalPhaseSticks(t *testing.T) {
	prev := &corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted", Message: "gone",
		StartTime: ptr(metav1.NewTime(t0))}
	s := Compute(testPod(corev1.RestartPolicyAlways), Inputs{Previous: prev, Now: now})
	eq(t, "phase", s.Phase, corev1.PodFailed)
	eq(t, "reason", s.Reason, "Evicted")
	eq(t, "message", s.Message, "gone")
	eq(t, "start time", s.StartTime.Time, t0)
}

func TestComputeTransitionTimes(t *testing.T) {
	app := rc("app", 0, podstate.StateRunning, 0)
	first := Compute(testPod(corev1.RestartPolicyAlways), ready(Inputs{Running: runtimePod(app), Now: t0}))
	later := t0.Add(time.Minute)
	app2 := rc("app", 0, podstate.StateExited, 1)
	second := Compute(testPod(corev1.RestartPolicyAlways), ready(Inputs{Running: runtimePod(app2), Previous: &first, Now: later}))
	eq(t, "scheduled unchanged", cond(second, corev1.PodScheduled).LastTransitionTime.Time, t0)
	eq(t, "ready changed", cond(second, corev1.PodReady).LastTransitionTime.Time, later)
	eq(t, "start time kept", second.StartTime.Time, t0)
}

func TestComputeRejected(t *testing.T) {
	s := Compute(testPod(corev1.RestartPolicyAlways), Inputs{
		Rejected: &Reason{Reason: "OutOfcpu", Message: "Node didn't have enough resource: cpu, requested: 500, used: 1800, capacity: 2000"},
		Now:      now,
	})
	eq(t, "phase", s.Phase, corev1.PodFailed)
	eq(t, "reason", s.Reason, "OutOfcpu")
	eq(t, "message", s.Message, "Pod was rejected: Node didn't have enough resource: cpu, requested: 500, used: 1800, capacity: 2000")
	eq(t, "qos", s.QOSClass, corev1.PodQOSBestEffort)
	eq(t, "no containers", len(s.ContainerStatuses), 0)
}

func TestComputeHostNetworkIP(t *testing.T) {
	pod := testPod(corev1.RestartPolicyAlways)
	pod.Spec.HostNetwork = true
	s := Compute(pod, Inputs{HostIP: "192.168.1.2", SandboxReady: true, Now: now})
	eq(t, "podIP", s.PodIP, "192.168.1.2")
}

func TestComputeEvicted(t *testing.T) {
	app := rc("app", 0, podstate.StateRunning, 0)
	dl := &Reason{Reason: "DeadlineExceeded", Message: "Pod was active on the node longer than the specified deadline"}
	s := Compute(testPod(corev1.RestartPolicyAlways), ready(Inputs{Running: runtimePod(app), Evicted: dl, Now: now}))
	eq(t, "phase", s.Phase, corev1.PodFailed)
	eq(t, "reason", s.Reason, dl.Reason)
	eq(t, "message", s.Message, dl.Message)
	eq(t, "app still shown running", s.ContainerStatuses[0].State.Running != nil, true)

	// A container in back-off when the pod is ended shows terminated
	// (the kubelet's TerminatePod), so get shows the pod's reason.
	exited := rc("app", 0, podstate.StateExited, 1)
	ev := &Reason{Reason: "Evicted", Message: "The node was low on resource: memory. "}
	s = Compute(testPod(corev1.RestartPolicyAlways), Inputs{Running: runtimePod(exited), Evicted: ev, Now: now,
		Waiting: map[string]Reason{"app": {Reason: "CrashLoopBackOff", Message: "back-off"}}})
	eq(t, "phase", s.Phase, corev1.PodFailed)
	if st := s.ContainerStatuses[0].State; st.Terminated == nil || st.Terminated.Reason != ContainerStatusUnknown || st.Terminated.ExitCode != 137 {
		t.Fatalf("container state %+v, want terminated ContainerStatusUnknown", st)
	}

	done := &corev1.PodStatus{Phase: corev1.PodSucceeded, StartTime: ptr(metav1.NewTime(t0))}
	s = Compute(testPod(corev1.RestartPolicyNever), Inputs{Previous: done, Evicted: dl, Now: now})
	eq(t, "a finished pod stays Succeeded", s.Phase, corev1.PodSucceeded)
	eq(t, "no reason", s.Reason, "")
}
