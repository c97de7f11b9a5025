// Package status computes a pod's API status from the desired pod, what the
// runtime observed and the last status: podhost's analog of the kubelet's
// generateAPIPodStatus (phase, conditions, container statuses and reasons).
// Compute is pure; Manager (manager.go) owns the computed statuses, their
// flush to the store, events and readiness.
package status

import (
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podhost/podhost/internal/model/podstate"
	"github.com/podhost/podhost/internal/model/qos"
)

// Container state reasons, as the kubelet reports them.
const (
	ContainerCreating = "ContainerCreating"
	PodInitializing   = "PodInitializing"
	CrashLoopBackOff  = "CrashLoopBackOff"
	ErrImagePull      = "ErrImagePull"
	ImagePullBackOff  = "ImagePullBackOff"
	ErrImageNeverPull = "ErrImageNeverPull"
	// SignatureValidationFailed: the image policy refused the image (the
	// kubelet's images.ErrSignatureValidationFailed, a CRI's answer there).
	SignatureValidationFailed  = "SignatureValidationFailed"
	CreateContainerConfigError = "CreateContainerConfigError"
	CreateContainerError       = "CreateContainerError"
	RunContainerError          = "RunContainerError"
	Completed                  = "Completed"
	Error                      = "Error"
	OOMKilled                  = "OOMKilled"
	ContainerStatusUnknown     = "ContainerStatusUnknown"
)

// RejectedPrefix starts the message of a pod admission rejected (as the
// kubelet's rejectPod).
const RejectedPrefix = "Pod was rejected: "

// Reason is a machine-readable reason with a human message.
type Reason struct {
	Reason, Message string
}

// Inputs is everything Compute needs besides the desired pod.
type Inputs struct {
	// Running is what the runtime holds for the pod (every attempt still
	// present), or nil.
	Running *podstate.Pod
	// SandboxReady: the pod's namespaces are pinned and its network is set
	// up (condition PodReadyToStartContainers).
	SandboxReady bool
	PodIPs       []string
	HostIP       string
	// Waiting is the last reason a container could not be started, by
	// container name (the kubelet's reason cache): ErrImagePull,
	// ImagePullBackOff, ErrImageNeverPull, CrashLoopBackOff,
	// CreateContainerConfigError, CreateContainerError, RunContainerError.
	// It shows while the container is due to be (re)started.
	Waiting map[string]Reason
	// Ready overrides a running container's readiness (readiness probes).
	// A running container without an entry is ready.
	Ready map[string]bool
	// Started overrides whether a running container has started (startup
	// probes). A running container without an entry has started; one that
	// has not started is not ready.
	Started map[string]bool
	// Previous is the last status computed for this pod (nil: none; the
	// pod's own status is used if it has one).
	Previous *corev1.PodStatus
	// Rejected marks a pod refused by admission: phase Failed.
	Rejected *Reason
	// Evicted marks a pod podhost ends itself (activeDeadlineSeconds passed,
	// the kubelet's ShouldEvict): phase Failed with this reason and message,
	// unless the pod had already reached a terminal phase.
	Evicted *Reason
	// Terminal: the pod is being finished (deleted, or done), so its
	// containers will not restart whatever the restart policy.
	Terminal bool
	// ResizeError is the last failure of an in-place resize (condition
	// PodResizeInProgress, reason Error), "" if none.
	ResizeError string
	Now         time.Time
}

// Compute returns the pod's status.
func Compute(pod *corev1.Pod, in Inputs) corev1.PodStatus {
	prev := previous(pod, in)
	now := metav1.NewTime(in.Now)
	if in.Rejected != nil {
		return rejected(pod, in.Rejected, prev, now)
	}
	s := corev1.PodStatus{QOSClass: qos.PodQOS(pod)}
	hasInit := len(pod.Spec.InitContainers) > 0
	s.InitContainerStatuses = containerStatuses(pod, in, prev.InitContainerStatuses, pod.Spec.InitContainers, hasInit, true)
	s.ContainerStatuses = containerStatuses(pod, in, prev.ContainerStatuses, pod.Spec.Containers, hasInit, false)
	s.Phase = phase(pod, s, in.Terminal, anyRegularRunning(pod, in.Running))
	if !terminalPhase(s.Phase) && terminalPhase(prev.Phase) {
		s.Phase = prev.Phase // pods never leave a terminal phase
	}
	if s.Phase == prev.Phase {
		s.Reason, s.Message = prev.Reason, prev.Message
	}
	if in.Evicted != nil && !terminalPhase(prev.Phase) {
		s.Phase, s.Reason, s.Message = corev1.PodFailed, in.Evicted.Reason, in.Evicted.Message
	}
	s.Conditions = conditions(pod, s, prev, in.SandboxReady, now)
	if in.Evicted != nil && s.Phase == corev1.PodFailed {
		terminateWaiting(&s)
	}
	setResize(pod, in, &s)
	keepResizeTransitions(&s, prev, now)
	setIPs(pod, &s, in)
	s.StartTime = startTime(prev, now)
	return s
}

func previous(pod *corev1.Pod, in Inputs) corev1.PodStatus {
	if in.Previous != nil {
		return *in.Previous
	}
	return pod.Status
}

func rejected(pod *corev1.Pod, r *Reason, prev corev1.PodStatus, now metav1.Time) corev1.PodStatus {
	msg := r.Message
	if !strings.HasPrefix(msg, RejectedPrefix) {
		msg = RejectedPrefix + msg
	}
	return corev1.PodStatus{
		Phase:     corev1.PodFailed,
		Reason:    r.Reason,
		Message:   msg,
		QOSClass:  qos.PodQOS(pod),
		StartTime: startTime(prev, now),
	}
}

func startTime(prev corev1.PodStatus, now metav1.Time) *metav1.Time {
	if prev.StartTime != nil && !prev.StartTime.IsZero() {
		t := *prev.StartTime
		return &t
	}
	return &now
}

func setIPs(pod *corev1.Pod, s *corev1.PodStatus, in Inputs) {
	ips := in.PodIPs
	if len(ips) == 0 && pod.Spec.HostNetwork && in.HostIP != "" {
		ips = []string{in.HostIP}
	}
	for _, ip := range ips {
		s.PodIPs = append(s.PodIPs, corev1.PodIP{IP: ip})
	}
	if len(ips) > 0 {
		s.PodIP = ips[0]
	}
	if in.HostIP != "" {
		s.HostIP = in.HostIP
		s.HostIPs = []corev1.HostIP{{IP: in.HostIP}}
	}
}

func terminalPhase(p corev1.PodPhase) bool {
	return p == corev1.PodSucceeded || p == corev1.PodFailed
}

// anyRegularRunning: a regular container runs, so the pod has been
// initialized (kubelet's HasAnyActiveRegularContainerStarted).
func anyRegularRunning(pod *corev1.Pod, running *podstate.Pod) bool {
	for _, c := range pod.Spec.Containers {
		if n := newest(running, c.Name); n != nil && n.State == podstate.StateRunning {
			return true
		}
	}
	return false
}

// counts tallies regular containers and sidecars for phase.
type counts struct {
	pendingInit, pendingSidecar, failedInit int
	unknown, running, waiting, stopped      int
	succeeded                               int
}

// phase is the kubelet's getPhase (without the ContainerRestartRules
// feature): init containers first, then sidecars, then regular containers.
func phase(pod *corev1.Pod, s corev1.PodStatus, terminal, initialized bool) corev1.PodPhase {
	n := countContainers(pod, s)
	if n.failedInit > 0 && pod.Spec.RestartPolicy == corev1.RestartPolicyNever {
		return corev1.PodFailed
	}
	switch {
	case n.pendingInit > 0 || (n.pendingSidecar > 0 && !initialized), n.waiting > 0:
		return corev1.PodPending
	case n.running > 0 && n.unknown == 0:
		return corev1.PodRunning
	case n.running == 0 && n.stopped > 0 && n.unknown == 0:
		if terminal {
			if n.stopped == n.succeeded {
				return corev1.PodSucceeded
			}
			return corev1.PodFailed
		}
		switch {
		case pod.Spec.RestartPolicy == corev1.RestartPolicyAlways:
			return corev1.PodRunning
		case n.stopped == n.succeeded:
			return corev1.PodSucceeded
		case pod.Spec.RestartPolicy == corev1.RestartPolicyNever:
			return corev1.PodFailed
		}
		return corev1.PodRunning
	}
	return corev1.PodPending
}

func countContainers(pod *corev1.Pod, s corev1.PodStatus) counts {
	var n counts
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		st := find(s.InitContainerStatuses, c.Name)
		if qos.IsRestartable(c) {
			countSidecar(&n, st)
			continue
		}
		switch {
		case st == nil, st.State.Running != nil:
			n.pendingInit++
		case st.State.Terminated != nil:
			if st.State.Terminated.ExitCode != 0 {
				n.failedInit++
			}
		case st.State.Waiting != nil && st.LastTerminationState.Terminated != nil:
			if st.LastTerminationState.Terminated.ExitCode != 0 {
				n.failedInit++
			}
		default:
			n.pendingInit++
		}
	}
	for _, c := range pod.Spec.Containers {
		countRegular(&n, find(s.ContainerStatuses, c.Name))
	}
	return n
}

func countSidecar(n *counts, st *corev1.ContainerStatus) {
	switch {
	case st == nil:
		n.unknown++
	case st.State.Running != nil:
		if st.Started == nil || !*st.Started {
			n.pendingSidecar++
		}
		n.running++
	case st.State.Terminated != nil:
		// terminated sidecars do not count toward the phase
	case st.State.Waiting != nil:
		if st.LastTerminationState.Terminated == nil {
			n.pendingSidecar++
			n.waiting++
		}
	default:
		n.pendingSidecar++
		n.unknown++
	}
}

func countRegular(n *counts, st *corev1.ContainerStatus) {
	switch {
	case st == nil:
		n.unknown++
	case st.State.Running != nil:
		n.running++
	case st.State.Terminated != nil:
		n.stopped++
		if st.State.Terminated.ExitCode == 0 {
			n.succeeded++
		}
	case st.State.Waiting != nil:
		if st.LastTerminationState.Terminated != nil {
			n.stopped++
		} else {
			n.waiting++
		}
	default:
		n.unknown++
	}
}

func find(list []corev1.ContainerStatus, name string) *corev1.ContainerStatus {
	for i := range list {
		if list[i].Name == name {
			return &list[i]
		}
	}
	return nil
}

// msgNotLocated is the kubelet's TerminatePod message for a container
// that was not running when its pod was ended.
const msgNotLocated = "The container could not be located when the pod was terminated"

// terminateWaiting is the kubelet's TerminatePod for a pod podhost ended
// (evicted, past its deadline): an app container left waiting (a
// back-off, a pending restart) is terminated with an unknown status, so
// the pod shows its reason, not the container's; with init containers
// only once the pod was initialized.
func terminateWaiting(s *corev1.PodStatus) {
	for _, c := range s.Conditions {
		if c.Type == corev1.PodInitialized && c.Status != corev1.ConditionTrue {
			return
		}
	}
	for i := range s.ContainerStatuses {
		st := &s.ContainerStatuses[i]
		if st.State.Waiting == nil {
			continue
		}
		st.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			Reason: ContainerStatusUnknown, Message: msgNotLocated, ExitCode: exitCodeUnknown}}
	}
}
