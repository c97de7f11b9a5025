package syncer

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/desired/manifest"
	"github.com/podhost/podhost/internal/kubelet/resize"
	"github.com/podhost/podhost/internal/model/podstate"
	"github.com/podhost/podhost/internal/model/qos"
	"github.com/podhost/podhost/internal/model/wellknown"
)

// observation is what the executor saw before planning: the runtime's view of
// the pod and whether its sandbox (pinned namespaces + network) is usable.
type observation struct {
	Running      *podstate.Pod // may be nil: nothing exists yet
	SandboxID    string        // current sandbox, "" if none
	SandboxReady bool
	// Unhealthy: container instances whose liveness or startup probe
	// failed (by container name; the prober's results).
	Unhealthy map[string]probeFailure
	// Started: the startup probe results of running containers (the
	// prober's); a sidecar with a startupProbe and no entry has not started.
	Started map[string]bool
	// Killed: the container instances (ID by container name) this sync has
	// just stopped for a failed liveness or startup probe. Unless the
	// policy is Never they restart now whatever their exit code (an app
	// that traps SIGTERM exits 0): the kubelet's computePodActions puts a
	// probe-killed container in ContainersToStart in the killing sync
	// (restart := shouldRestartOnFailure(pod)).
	Killed map[string]string
	// StuckUnknown: container instances (by ID) in unknown state for
	// unknownLimit or longer: replaced as the kubelet replaces a CRI
	// container in unknown state, no longer waited for.
	StuckUnknown map[string]bool
}

// probeFailure is one failed liveness or startup probe of a container
// instance.
type probeFailure struct {
	ContainerID string
	Probe       string // "liveness" or "startup"
}

// unhealthyKill is a running container to stop because a probe failed; it
// then restarts unless the policy is Never (observation.Killed).
type unhealthyKill struct {
	Container *podstate.Container
	Probe     string
}

// podActions is the plan for one SyncPod (kubelet's podActions, minus CRI).
type podActions struct {
	// CreateSandbox: the pod needs a new sandbox (first start, or the old one
	// is gone, e.g. after a reboot). KillPod: stop every running container first.
	CreateSandbox bool
	KillPod       bool
	// StartInit is the next init container to (re)start; app containers wait.
	StartInit *corev1.Container
	// StartSidecars lists sidecars (restartable init containers) to restart
	// once the pod has initialized, started before the app containers.
	StartSidecars []*corev1.Container
	// Start lists app containers to create and start (restarts included).
	Start []*corev1.Container
	// Kill lists running containers to stop (their spec hash changed).
	Kill []*podstate.Container
	// Resize lists running containers whose cgroups are changed live to
	// the pod's (allocated) resources, without a restart.
	Resize []containerResize
	// Unhealthy lists running containers whose liveness or startup probe
	// failed: stop them first, then plan again (they restart unless the
	// policy is Never).
	Unhealthy []unhealthyKill
	// Unknown lists containers whose task containerd could not report
	// (its shim did not answer within containerd's 2 s: a busy machine,
	// a containerd restart). They are left alone and the pod planned
	// again shortly: starting a new attempt would remove — kill — one
	// that may well be running (the kubelet kills and restarts a CRI
	// container in unknown state; containerd's UNKNOWN is transient).
	Unknown []*podstate.Container
	// Terminal is set when the pod has reached Succeeded or Failed.
	Terminal bool
	Phase    corev1.PodPhase
}

// waitUnknown: c is in unknown state, not for unknownLimit yet.
func waitUnknown(c *podstate.Container, obs observation) bool {
	return c.State == podstate.StateUnknown && !obs.StuckUnknown[c.ID]
}

// computePodActions decides what SyncPod must do to move the observed pod
// towards the desired one. It is pure: no I/O, no clock.
func computePodActions(pod *corev1.Pod, obs observation) podActions {
	policy := pod.Spec.RestartPolicy
	running := obs.Running
	if running == nil {
		running = &podstate.Pod{}
	}
	if !obs.SandboxReady {
		return planNewSandbox(pod, running)
	}
	var a podActions
	for _, c := range running.Containers {
		if waitUnknown(c, obs) {
			a.Unknown = append(a.Unknown, c)
		}
	}
	if a.Unhealthy = unhealthySidecars(pod, running, obs); len(a.Unhealthy) > 0 {
		return a // SyncPod kills them and plans again
	}
	initialized := anyAppInSandbox(pod, running, obs.SandboxID)
	if !initialized {
		if next, done, failed := nextInit(pod, running, obs); !done {
			if failed {
				a.Terminal, a.Phase = true, corev1.PodFailed
				return a
			}
			a.StartInit = next
			return a
		}
	}
	for i := range pod.Spec.Containers {
		spec := &pod.Spec.Containers[i]
		c := running.Find(spec.Name)
		switch {
		case c == nil:
			a.Start = append(a.Start, spec)
		case c.State == podstate.StateRunning:
			if f, ok := obs.Unhealthy[spec.Name]; ok && f.ContainerID == c.ID {
				a.Unhealthy = append(a.Unhealthy, unhealthyKill{Container: c, Probe: f.Probe})
			} else if specChanged(pod, c) {
				a.Kill = append(a.Kill, c)
				a.Start = append(a.Start, spec)
			} else {
				a.planResize(spec, c)
			}
		case waitUnknown(c, obs): // in a.Unknown: wait
		case c.State == podstate.StateCreated, c.State == podstate.StateUnknown:
			a.Start = append(a.Start, spec)
		case shouldRestart(policy, c), policy != corev1.RestartPolicyNever && killedForProbe(obs, c):
			a.Start = append(a.Start, spec)
		}
	}
	if len(a.Start) == 0 && len(a.Kill) == 0 && len(a.Unhealthy) == 0 && len(a.Unknown) == 0 {
		a.Terminal, a.Phase = terminalPhase(pod, running)
	}
	if initialized && !a.Terminal {
		// Sidecars restart whatever the pod's restartPolicy, until every
		// app container has finished for good (then they are stopped).
		a.StartSidecars = sidecarsToRestart(pod, running, obs.SandboxID)
	}
	return a
}

// specChanged reports whether running container c was created from a
// version of pod that differs in more than manifest.MutablePaths (labels,
// annotations, resources): it must be replaced. An update that changed only
// those keeps the container (labels and annotations are applied in place,
// resources by the resize step).
//
// A container created from the very same document (same config hash) is
// kept whatever its identity label (MutablePaths may have changed since).
// A container created by a podhost older than identity hashes carries only
// the config hash of its version. If the pod's UID is the one that version
// derived (PodUID over that config hash: the pod was adopted on upgrade,
// see internal/kubelet/manager), the identity did not change either, as any other
// edit gives a new UID. Else (an explicit metadata.uid) a changed config
// hash replaces it, as before.
func specChanged(pod *corev1.Pod, c *podstate.Container) bool {
	hash := manifest.Hash(pod)
	if hash == "" || c.Hash == hash {
		return false // the very document it was created from
	}
	if id := c.Labels[wellknown.LabelIdentityHash]; id != "" {
		want := manifest.Identity(pod)
		return want != "" && id != want
	}
	if c.Hash == "" {
		return false
	}
	return pod.UID != manifest.PodUID(pod.Namespace, pod.Name, c.Hash)
}

// containerResize is a running container to resize in place.
type containerResize struct {
	Spec      *corev1.Container
	Container *podstate.Container
}

// planResize: a running container whose actuated resources differ from the
// spec's is updated live, or restarted when its resizePolicy says
// RestartContainer for a changed resource (the kubelet's
// computePodResizeAction).
func (a *podActions) planResize(spec *corev1.Container, c *podstate.Container) {
	switch resize.Of(spec, c) {
	case resize.Update:
		a.Resize = append(a.Resize, containerResize{Spec: spec, Container: c})
	case resize.Restart:
		a.Kill = append(a.Kill, c)
		a.Start = append(a.Start, spec)
	}
}

// planNewSandbox handles a pod with no usable sandbox (first start, or the
// sandbox is gone: a reboot, a lost namespace), as the kubelet's
// computePodActions does when createPodSandbox: a Never pod of which any
// container, init or app, ran gets no new sandbox (it has finished; Failed
// unless every app container exited 0). Otherwise a new sandbox reruns the
// init containers, then starts every app container but those that already
// succeeded under OnFailure; with none left to start the pod has finished
// (Succeeded).
func planNewSandbox(pod *corev1.Pod, running *podstate.Pod) podActions {
	a := podActions{KillPod: len(running.Running()) > 0}
	if pod.Spec.RestartPolicy == corev1.RestartPolicyNever && len(running.Containers) > 0 {
		a.Terminal, a.Phase = terminalPhase(pod, running)
		if !a.Terminal { // a container never ran to completion: it failed
			a.Terminal, a.Phase = true, corev1.PodFailed
		}
		return a
	}
	start := appsToStart(pod, running)
	if len(start) == 0 {
		// Every app container succeeded under OnFailure (e.g. before a
		// reboot or a podhost restart): no new sandbox, nothing restarts.
		a.Terminal, a.Phase = true, corev1.PodSucceeded
		return a
	}
	a.CreateSandbox = true
	if len(pod.Spec.InitContainers) > 0 {
		a.StartInit = &pod.Spec.InitContainers[0]
		return a
	}
	a.Start = start
	return a
}

// appsToStart: the app containers a new sandbox starts, all but those that
// succeeded under OnFailure (the kubelet's containerSucceeded, except that
// a created, never started container, which CRI reports with exit code 0,
// has not succeeded here).
func appsToStart(pod *corev1.Pod, running *podstate.Pod) []*corev1.Container {
	var out []*corev1.Container
	for i := range pod.Spec.Containers {
		spec := &pod.Spec.Containers[i]
		c := running.Find(spec.Name)
		if pod.Spec.RestartPolicy == corev1.RestartPolicyOnFailure && c != nil &&
			c.State == podstate.StateExited && c.ExitCode == 0 {
			continue
		}
		out = append(out, spec)
	}
	return out
}

// nextInit walks init containers in order, considering only those run in the
// current sandbox (a new sandbox reruns them all, as the kubelet does).
// done: every init container succeeded, every sidecar has started. failed:
// one failed and the policy forbids restarting it. next: the one to start
// now (nil = wait for a running one). A sidecar (restartPolicy Always) is
// passed once it has started — its startupProbe succeeded, or, without one,
// it runs — and restarted whenever it exited, whatever the pod's policy
// (the kubelet's computeInitContainerActions).
func nextInit(pod *corev1.Pod, running *podstate.Pod, obs observation) (next *corev1.Container, done, failed bool) {
	for i := range pod.Spec.InitContainers {
		spec := &pod.Spec.InitContainers[i]
		c := findInSandbox(running, spec.Name, obs.SandboxID)
		sidecar := qos.IsRestartable(spec)
		switch {
		case c != nil && waitUnknown(c, obs): // wait until it is known (podActions.Unknown)
			return nil, false, false
		case c == nil, c.State == podstate.StateCreated, c.State == podstate.StateUnknown:
			return spec, false, false
		case c.State == podstate.StateRunning && sidecar:
			if !sidecarStarted(spec, obs.Started) {
				return nil, false, false
			}
			continue
		case c.State == podstate.StateRunning:
			return nil, false, false
		case sidecar:
			return spec, false, false
		case c.ExitCode == 0:
			continue
		case pod.Spec.RestartPolicy == corev1.RestartPolicyNever:
			return nil, false, true
		default:
			return spec, false, false
		}
	}
	return nil, true, false
}

// sidecarStarted: a running sidecar without a startupProbe has started;
// with one, once the probe succeeded.
func sidecarStarted(spec *corev1.Container, started map[string]bool) bool {
	if spec.StartupProbe == nil {
		return true
	}
	return started[spec.Name]
}

// unhealthySidecars are running sidecars whose liveness or startup probe
// failed: killed, they restart as any exited sidecar.
func unhealthySidecars(pod *corev1.Pod, running *podstate.Pod, obs observation) []unhealthyKill {
	var out []unhealthyKill
	for i := range pod.Spec.InitContainers {
		spec := &pod.Spec.InitContainers[i]
		if !qos.IsRestartable(spec) {
			continue
		}
		c := findInSandbox(running, spec.Name, obs.SandboxID)
		if f, ok := obs.Unhealthy[spec.Name]; ok && c != nil && c.State == podstate.StateRunning && f.ContainerID == c.ID {
			out = append(out, unhealthyKill{Container: c, Probe: f.Probe})
		}
	}
	return out
}

// sidecarsToRestart are the sidecars of an initialized pod that do not run
// in the current sandbox.
func sidecarsToRestart(pod *corev1.Pod, running *podstate.Pod, sandboxID string) []*corev1.Container {
	var out []*corev1.Container
	for i := range pod.Spec.InitContainers {
		spec := &pod.Spec.InitContainers[i]
		if !qos.IsRestartable(spec) {
			continue
		}
		if c := findInSandbox(running, spec.Name, sandboxID); c == nil || c.State != podstate.StateRunning {
			out = append(out, spec)
		}
	}
	return out
}

// anyAppInSandbox: an app container was created in the current sandbox, so
// the pod has initialized (kubelet's HasAnyRegularContainerCreated): init
// containers are not run again, only sidecars restart.
func anyAppInSandbox(pod *corev1.Pod, running *podstate.Pod, sandboxID string) bool {
	for _, c := range pod.Spec.Containers {
		if findInSandbox(running, c.Name, sandboxID) != nil {
			return true
		}
	}
	return false
}

func findInSandbox(p *podstate.Pod, name, sandboxID string) *podstate.Container {
	c := p.Find(name)
	if c == nil || (sandboxID != "" && c.SandboxID != sandboxID) {
		return nil
	}
	return c
}

func shouldRestart(policy corev1.RestartPolicy, c *podstate.Container) bool {
	switch policy {
	case corev1.RestartPolicyNever:
		return false
	case corev1.RestartPolicyOnFailure:
		return c.ExitCode != 0
	default:
		return true
	}
}

// killedForProbe: c is the instance this sync stopped for a failed probe.
func killedForProbe(obs observation, c *podstate.Container) bool {
	id, ok := obs.Killed[c.Name]
	return ok && id == c.ID
}

// terminalPhase reports whether every app container has exited for good and,
// if so, whether the pod Succeeded (all exit 0) or Failed.
func terminalPhase(pod *corev1.Pod, running *podstate.Pod) (bool, corev1.PodPhase) {
	if pod.Spec.RestartPolicy == corev1.RestartPolicyAlways {
		return false, ""
	}
	phase := corev1.PodSucceeded
	for _, spec := range pod.Spec.Containers {
		c := running.Find(spec.Name)
		if c == nil || c.State != podstate.StateExited {
			return false, ""
		}
		if c.ExitCode != 0 {
			phase = corev1.PodFailed
		}
	}
	return true, phase
}
