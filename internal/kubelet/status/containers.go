package status

import (
	"cmp"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podhost/podhost/internal/model/podstate"
	"github.com/podhost/podhost/internal/model/qos"
)

// ContainerIDPrefix is the runtime scheme of container IDs in statuses.
const ContainerIDPrefix = "containerd://"

const (
	msgUnknownRunning  = "The container could not be located when the pod was deleted.  The container used to be Running"
	msgInitUnavailable = "Unable to get init container status from container runtime and pod has been initialized, treat it as exited normally"
	exitCodeUnknown    = 137
)

// containerStatuses is the kubelet's convertToAPIContainerStatuses for one
// list (init or regular): one status per spec container, in spec order.
func containerStatuses(pod *corev1.Pod, in Inputs, old []corev1.ContainerStatus, containers []corev1.Container, hasInit, isInit bool) []corev1.ContainerStatus {
	out := make([]corev1.ContainerStatus, 0, len(containers))
	for i := range containers {
		c := &containers[i]
		st := containerStatus(pod, in, c, find(old, c.Name), hasInit, isInit)
		setReadiness(&st, c, isInit, in.Ready, in.Started)
		out = append(out, st)
	}
	return out
}

func containerStatus(pod *corev1.Pod, in Inputs, c *corev1.Container, old *corev1.ContainerStatus, hasInit, isInit bool) corev1.ContainerStatus {
	attempts := attemptsOf(in.Running, c.Name)
	st := defaultStatus(c, old, hasInit)
	if len(attempts) == 0 {
		lostRunning(pod, &st, old, hasInit)
	} else {
		st = fromRuntime(attempts[0], old)
		if len(attempts) > 1 {
			st.LastTerminationState = stateOf(attempts[1], old)
		} else {
			st.LastTerminationState = lastFromPrevious(st, old)
		}
	}
	var latest *podstate.Container
	if len(attempts) > 0 {
		latest = attempts[0]
	}
	if isInit {
		if latest != nil && latest.State == podstate.StateExited && latest.ExitCode == 0 {
			return st
		}
		if latest == nil && !qos.IsRestartable(c) && st.State.Waiting != nil && anyRegularCreated(pod, in.Running) {
			st.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				Reason: Completed, Message: msgInitUnavailable,
			}}
			return st
		}
	}
	if r, ok := in.Waiting[c.Name]; ok && shouldRestart(pod, c, latest) {
		if st.State.Terminated != nil {
			st.LastTerminationState = st.State
		}
		st.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: r.Reason, Message: r.Message}}
	}
	return st
}

// defaultStatus is a container's status before the runtime is consulted:
// waiting (ContainerCreating, or PodInitializing in a pod with init
// containers), or the previous status when that was terminated.
func defaultStatus(c *corev1.Container, old *corev1.ContainerStatus, hasInit bool) corev1.ContainerStatus {
	reason := ContainerCreating
	if hasInit {
		reason = PodInitializing
	}
	st := corev1.ContainerStatus{
		Name:  c.Name,
		Image: c.Image,
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}},
	}
	if old == nil {
		return st
	}
	if old.State.Terminated != nil {
		return *old.DeepCopy()
	}
	st.RestartCount = old.RestartCount
	st.LastTerminationState = *old.LastTerminationState.DeepCopy()
	return st
}

// lostRunning handles a container the runtime no longer has although it was
// running: it terminated with an unknown status (and, unless the pod is
// being deleted, will be restarted).
func lostRunning(pod *corev1.Pod, st *corev1.ContainerStatus, old *corev1.ContainerStatus, hasInit bool) {
	if old == nil || old.State.Terminated != nil || old.State.Running == nil {
		return
	}
	def := ContainerCreating
	if hasInit {
		def = PodInitializing
	}
	if st.State.Waiting == nil || st.State.Waiting.Reason != def || st.LastTerminationState.Terminated != nil {
		return
	}
	st.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{
		Reason: ContainerStatusUnknown, Message: msgUnknownRunning, ExitCode: exitCodeUnknown,
	}
	if pod.DeletionTimestamp == nil {
		st.RestartCount++
	}
}

// fromRuntime converts the newest attempt of a container.
func fromRuntime(c *podstate.Container, old *corev1.ContainerStatus) corev1.ContainerStatus {
	st := corev1.ContainerStatus{
		Name:         c.Name,
		Image:        c.Image,
		ImageID:      c.ImageRef,
		ContainerID:  ContainerIDPrefix + c.ID,
		RestartCount: int32(c.RestartCount),
		State:        stateOf(c, old),
	}
	if c.State == podstate.StateUnknown && old != nil && old.State.Running != nil {
		st.RestartCount = old.RestartCount + 1
	}
	return st
}

// stateOf maps a runtime container to an API state.
func stateOf(c *podstate.Container, old *corev1.ContainerStatus) corev1.ContainerState {
	switch c.State {
	case podstate.StateRunning:
		return corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: timeOf(c.StartedAt)}}
	case podstate.StateCreated:
		return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: ContainerCreating}}
	case podstate.StateExited:
		return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode:    c.ExitCode,
			Reason:      exitReason(c),
			Message:     c.Message,
			StartedAt:   timeOf(c.StartedAt),
			FinishedAt:  timeOf(c.FinishedAt),
			ContainerID: ContainerIDPrefix + c.ID,
		}}
	}
	if old != nil && old.State.Running != nil {
		return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			Reason:      ContainerStatusUnknown,
			Message:     "The container could not be located when the pod was terminated",
			ExitCode:    exitCodeUnknown,
			ContainerID: ContainerIDPrefix + c.ID,
		}}
	}
	return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{}}
}

// exitReason is the runtime's reason, else containerd CRI's: OOMKilled is
// reported by the runtime, Completed for exit 0, Error otherwise.
func exitReason(c *podstate.Container) string {
	switch {
	case c.Reason != "":
		return c.Reason
	case c.ExitCode == 0:
		return Completed
	}
	return Error
}

// lastFromPrevious recovers the last termination from the previous status
// when the runtime no longer holds the previous attempt.
func lastFromPrevious(st corev1.ContainerStatus, old *corev1.ContainerStatus) corev1.ContainerState {
	if old == nil {
		return corev1.ContainerState{}
	}
	if old.ContainerID == st.ContainerID {
		return *old.LastTerminationState.DeepCopy()
	}
	switch {
	case old.State.Terminated != nil:
		return *old.State.DeepCopy()
	case old.State.Running != nil && old.ContainerID != "":
		return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			Reason: ContainerStatusUnknown, Message: msgUnknownRunning, ExitCode: exitCodeUnknown,
			StartedAt: old.State.Running.StartedAt, ContainerID: old.ContainerID,
		}}
	}
	return *old.LastTerminationState.DeepCopy()
}

// shouldRestart is the kubelet's ShouldContainerBeRestarted: whether the
// next sync would (re)start the container, so a start failure shows.
func shouldRestart(pod *corev1.Pod, c *corev1.Container, latest *podstate.Container) bool {
	if pod.DeletionTimestamp != nil {
		return false
	}
	if latest == nil {
		return true
	}
	switch latest.State {
	case podstate.StateRunning:
		return false
	case podstate.StateUnknown, podstate.StateCreated:
		return true
	}
	if qos.IsRestartable(c) {
		return true
	}
	switch pod.Spec.RestartPolicy {
	case corev1.RestartPolicyNever:
		return false
	case corev1.RestartPolicyOnFailure:
		return latest.ExitCode != 0
	}
	return true
}

// setReadiness sets started and ready as the kubelet's prober manager does:
// a running container has started (unless started says otherwise) and is
// ready once started (unless ready says otherwise); a regular init
// container is ready once it completed successfully.
func setReadiness(st *corev1.ContainerStatus, c *corev1.Container, isInit bool, ready, started map[string]bool) {
	running := st.State.Running != nil
	isStarted := running
	if s, ok := started[c.Name]; ok && running {
		isStarted = s
	}
	st.Started = &isStarted
	if isInit && !qos.IsRestartable(c) {
		st.Ready = st.State.Terminated != nil && st.State.Terminated.ExitCode == 0
		return
	}
	st.Ready = isStarted
	if r, ok := ready[c.Name]; ok && isStarted {
		st.Ready = r
	}
}

// attemptsOf returns the runtime's containers for name, newest first.
func attemptsOf(p *podstate.Pod, name string) []*podstate.Container {
	if p == nil {
		return nil
	}
	var out []*podstate.Container
	for _, c := range p.Containers {
		if c.Name == name {
			out = append(out, c)
		}
	}
	slices.SortStableFunc(out, func(a, b *podstate.Container) int {
		if c := cmp.Compare(b.Attempt, a.Attempt); c != 0 {
			return c
		}
		return b.CreatedAt.Compare(a.CreatedAt)
	})
	return out
}

func newest(p *podstate.Pod, name string) *podstate.Container {
	if a := attemptsOf(p, name); len(a) > 0 {
		return a[0]
	}
	return nil
}

// anyRegularCreated: the runtime holds a regular container, so the init
// containers all completed (kuberuntime's HasAnyRegularContainerCreated).
func anyRegularCreated(pod *corev1.Pod, running *podstate.Pod) bool {
	for _, c := range pod.Spec.Containers {
		if n := newest(running, c.Name); n != nil && n.State != podstate.StateUnknown {
			return true
		}
	}
	return false
}

func timeOf(t time.Time) metav1.Time {
	if t.IsZero() {
		return metav1.Time{}
	}
	return metav1.NewTime(t)
}
