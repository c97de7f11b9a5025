package syncer

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/host/cgroups"
	"github.com/podhost/podhost/internal/host/sandbox"
	"github.com/podhost/podhost/internal/host/volumes"
	"github.com/podhost/podhost/internal/kubelet/podworkers"
	"github.com/podhost/podhost/internal/kubelet/status"
	"github.com/podhost/podhost/internal/model/podstate"
	"github.com/podhost/podhost/internal/model/qos"
	"github.com/podhost/podhost/internal/model/records"
)

// SyncPod moves the pod towards its spec: pod cgroup, sandbox, init
// containers one by one, then app containers, restarting exited ones per
// restartPolicy with crash-loop back-off, and killing containers whose
// liveness or startup probe failed. running is the pod as the pod cache
// observed it after the worker's previous sync. It reports Terminal once
// the pod has Succeeded or Failed, and RequeueAfter when a back-off ends.
func (s *Syncer) SyncPod(ctx context.Context, _ podworkers.UpdateType, pod *corev1.Pod, running *podstate.Pod) (podworkers.SyncResult, error) {
	if running == nil {
		running = &podstate.Pod{UID: pod.UID}
	}
	pc, err := s.beginSync(ctx, pod, running)
	if err != nil {
		return podworkers.SyncResult{}, err
	}
	sb, ready := s.currentSandbox(pod.UID)
	if ready && sandboxChanged(pod, sb) {
		ready = false
	}
	if s.enforceDeadline(pod) {
		s.updateStatus(pod, running, sb)
		return podworkers.SyncResult{Terminal: true}, nil
	}
	actions := s.plan(pod, running, sb, ready, nil)
	var killed map[string]string
	if len(actions.Unhealthy) > 0 {
		if err := s.killUnhealthy(ctx, pod, actions.Unhealthy); err != nil {
			return podworkers.SyncResult{}, err
		}
		if running, err = s.runtimePod(ctx, pod.UID); err != nil {
			return podworkers.SyncResult{}, err
		}
		// The killed ones restart now unless the policy is Never, whatever
		// their exit code (kubelet computePodActions).
		killed = killedIDs(actions.Unhealthy)
		actions = s.plan(pod, running, sb, ready, killed)
	}
	var rq requeue
	errs := s.execute(ctx, pod, running, &sb, pc, actions, killed, &rq)
	if len(actions.Resize) > 0 && len(errs) == 0 {
		if err := s.resizeContainers(ctx, pod, actions.Resize, &rq); err != nil {
			errs = append(errs, err)
		}
	}
	if !actions.KillPod && !actions.Terminal && volumes.HasDataVolumes(pod) {
		// A changed ConfigMap or Secret shows in the running pod's files
		// (the manager wakes the pods that reference it); the pod is not
		// restarted.
		if err := s.vol.Refresh(ctx, pod); err != nil {
			s.obs.Event(pod.UID, corev1.EventTypeWarning, "FailedMount", err.Error())
		}
	}
	if len(errs) > 0 || len(actions.Kill) > 0 || len(actions.Resize) > 0 || actions.KillPod || actions.CreateSandbox || actions.StartInit != nil ||
		len(actions.StartSidecars) > 0 || len(actions.Start) > 0 {
		if fresh, err := s.runtimePod(ctx, pod.UID); err != nil {
			errs = append(errs, err)
		} else {
			running = fresh
		}
	}
	s.updateStatus(pod, running, sb)
	s.requeueAtDeadline(pod, &rq)
	// Settled: the cache holds running as this sync leaves it (listed
	// again above after any change; an error returns unsettled).
	return podworkers.SyncResult{Terminal: actions.Terminal, RequeueAfter: rq.d, Settled: len(errs) == 0}, errors.Join(errs...)
}

// beginSync is what a sync does before it plans: it finishes a log removal
// a crash left (adoptLogs: before any container starts) and makes sure the
// pod cgroup exists with the pod's resources.
func (s *Syncer) beginSync(ctx context.Context, pod *corev1.Pod, running *podstate.Pod) (cgroups.PodCgroup, error) {
	if err := s.adoptLogs(ctx, pod.UID, running); err != nil {
		return cgroups.PodCgroup{}, err
	}
	pc, err := s.cg.EnsurePod(ctx, pod.UID, qos.PodQOS(pod), s.podCgroupResources(pod, running))
	if err != nil {
		return cgroups.PodCgroup{}, fmt.Errorf("pod cgroup: %w", err)
	}
	return pc, nil
}

// plan observes the prober's results and computes the pod's actions;
// killed: the instances this sync stopped for a failed probe.
func (s *Syncer) plan(pod *corev1.Pod, running *podstate.Pod, sb records.SandboxRecord, ready bool, killed map[string]string) podActions {
	r := s.prober.Results(pod.UID)
	actions := computePodActions(pod, observation{Running: running, SandboxID: sb.ID, SandboxReady: ready,
		Unhealthy: unhealthyOf(r), Started: r.Started, Killed: killed, StuckUnknown: s.unknown.stuck(running, s.now())})
	s.podLog(pod).Debug("sync pod", "createSandbox", actions.CreateSandbox, "killPod", actions.KillPod,
		"init", actions.StartInit != nil, "sidecars", len(actions.StartSidecars), "start", len(actions.Start), "kill", len(actions.Kill), "unhealthy", len(actions.Unhealthy), "resize", len(actions.Resize), "unknown", len(actions.Unknown), "terminal", actions.Terminal)
	return actions
}

// execute carries out a plan: stop, (re)create the sandbox, start. killed:
// the instances (ID by name) this sync stopped for a failed probe.
func (s *Syncer) execute(ctx context.Context, pod *corev1.Pod, running *podstate.Pod, sb *records.SandboxRecord, pc cgroups.PodCgroup, actions podActions, killed map[string]string, rq *requeue) []error {
	if actions.KillPod {
		if err := s.stopPodContainers(ctx, pod, running.Running(), gracePeriod(pod, nil)); err != nil {
			return []error{err}
		}
	}
	var slot *slotHold
	if actions.CreateSandbox {
		if !pod.Spec.HostNetwork { // slots.go
			var err error
			if slot, err = s.slots.take(ctx); err != nil {
				return []error{fmt.Errorf("wait for a start slot: %w", err)}
			}
			defer slot.release()
		}
		rec, err := s.recreateSandbox(ctx, pod, *sb, pc)
		*sb = rec
		if err != nil {
			s.obs.Event(pod.UID, corev1.EventTypeWarning, "FailedCreatePodSandBox", err.Error())
			s.setWaitingAll(pod.UID, allContainers(pod), ReasonCreatePodSandboxError, err.Error())
			return []error{err}
		}
		s.clearWaitingReason(pod.UID, ReasonCreatePodSandboxError)
	}
	if err := s.stopContainers(ctx, pod, actions.Kill, gracePeriod(pod, nil)); err != nil {
		return []error{err}
	}
	if len(actions.Kill) > 0 {
		// The stopped instances are the previous ones of their restarts
		// (restart count, lastState), not stale created containers.
		fresh, err := s.runtimePod(ctx, pod.UID)
		if err != nil {
			return []error{err}
		}
		running = fresh
	}
	if len(actions.Unknown) > 0 {
		rq.after(unknownRecheck) // the next look at containerd knows them
	}
	return s.startAll(ctx, startInput{pod: pod, running: running, sandbox: *sb, cgroup: pc, killed: killed, requeue: rq, slot: slot}, actions)
}

// unknownRecheck is how soon a pod with containers in unknown state is
// planned again.
const unknownRecheck = time.Second

// requeue collects when the pod's next sync is due: the earliest end of a
// back-off the sync waited on.
type requeue struct{ d time.Duration }

// after asks for a sync once d has passed (plus a little, so the back-off
// has ended by then).
func (r *requeue) after(d time.Duration) {
	d += 50 * time.Millisecond
	if r.d == 0 || d < r.d {
		r.d = d
	}
}

// startAll starts what the plan a starts; in has everything but the volumes.
func (s *Syncer) startAll(ctx context.Context, in startInput, a podActions) []error {
	if a.StartInit == nil && len(a.StartSidecars) == 0 && len(a.Start) == 0 {
		return nil
	}
	pod := in.pod
	vols, warnings, err := s.vol.Prepare(s.imageVolumeAuth(ctx, pod), pod)
	for _, w := range warnings {
		// A populated volume whose ConfigMap or Secret went away keeps its
		// last files and the containers start with them, as the kubelet's
		// failed remount of a mounted volume (FailedMount event only).
		s.obs.Event(pod.UID, corev1.EventTypeWarning, "FailedMount", w.Error())
	}
	if err != nil {
		s.obs.Event(pod.UID, corev1.EventTypeWarning, "FailedMount", err.Error())
		starting := append(append([]*corev1.Container(nil), a.StartSidecars...), a.Start...)
		if a.StartInit != nil {
			starting = []*corev1.Container{a.StartInit}
		}
		s.setWaitingAll(pod.UID, starting, "CreateContainerConfigError", "volumes: "+err.Error())
		return []error{fmt.Errorf("volumes: %w", err)}
	}
	in.volumes = vols
	if a.StartInit != nil {
		if err := s.startContainer(ctx, in, a.StartInit, true); err != nil && !errors.Is(err, errBackoff) {
			return []error{err}
		}
		return nil
	}
	var errs []error
	for _, c := range a.StartSidecars {
		if err := s.startContainer(ctx, in, c, true); err != nil && !errors.Is(err, errBackoff) {
			errs = append(errs, err)
		}
	}
	for _, c := range a.Start {
		if err := s.startContainer(ctx, in, c, false); err != nil && !errors.Is(err, errBackoff) {
			errs = append(errs, err)
		}
	}
	return errs
}

// currentSandbox returns the pod's newest sandbox record and whether it is
// usable: Ready, made in this boot, its pinned network namespace present
// and its PID namespace's first process alive.
func (s *Syncer) currentSandbox(uid types.UID) (records.SandboxRecord, bool) {
	recs, err := s.store.PodSandboxes(uid)
	if err != nil {
		return records.SandboxRecord{}, false
	}
	var best records.SandboxRecord
	for _, r := range recs {
		if best.ID == "" || r.CreatedAt.After(best.CreatedAt) {
			best = r
		}
	}
	ready := best.ID != "" && best.State == records.SandboxReady && best.BootID == s.cfg.BootID &&
		(best.NetNS == "" || sandbox.Exists(best.NetNS)) && (best.PID == "" || sandbox.PIDNamespaceAlive(best.PID))
	return best, ready
}

// sandboxChanged is the kubelet's podSandboxChanged for a sandbox that is
// still there: its network namespace mode is not the pod's (a same-UID
// update toggled hostNetwork). The pod is then killed and gets a new
// sandbox, as when its sandbox is lost.
func sandboxChanged(pod *corev1.Pod, sb records.SandboxRecord) bool {
	return sb.ID != "" && pod.Spec.HostNetwork != (sb.NetNS == "")
}

// updateStatus computes the API status from what was observed and hands it
// to the observer.
func (s *Syncer) updateStatus(pod *corev1.Pod, running *podstate.Pod, sb records.SandboxRecord) {
	s.setStatus(pod, running, sb, sb.State == records.SandboxReady)
}

// updateStoppedStatus is updateStatus once every container of the pod has
// stopped for good (terminating, terminated). The kubelet's
// SyncTerminatingPod stops the sandbox with the containers (killPod), then
// reads the pod again and regenerates its status: PodReadyToStartContainers
// turns False, only the pod IPs carry over (preserveDataFromBeforeStopping).
func (s *Syncer) updateStoppedStatus(pod *corev1.Pod, running *podstate.Pod) {
	sb, _ := s.currentSandbox(pod.UID)
	s.setStatus(pod, running, sb, false)
}

func (s *Syncer) setStatus(pod *corev1.Pod, running *podstate.Pod, sb records.SandboxRecord, sandboxReady bool) {
	s.mu.Lock()
	waiting := make(map[string]status.Reason, len(s.waiting[pod.UID]))
	for k, v := range s.waiting[pod.UID] {
		waiting[k] = v
	}
	s.mu.Unlock()
	ips := sb.IPs
	if pod.Spec.HostNetwork && s.cfg.HostIP != "" {
		ips = []string{s.cfg.HostIP}
	}
	ready, started := s.probeResults(pod, running, ips)
	in := status.Inputs{Running: running, PodIPs: ips, HostIP: s.cfg.HostIP, Waiting: waiting,
		SandboxReady: sandboxReady, Ready: ready, Started: started,
		Previous: s.obs.LastStatus(pod.UID), Evicted: s.endReason(pod), Now: s.now(),
		ResizeError: s.takeResizeError(pod.UID)}
	s.obs.SetStatus(pod, status.Compute(pod, in))
}

func (s *Syncer) setWaiting(uid types.UID, container, reason, message string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.waiting[uid]
	if m == nil {
		m = map[string]status.Reason{}
		s.waiting[uid] = m
	}
	m[container] = status.Reason{Reason: reason, Message: message}
}

// ReasonCreatePodSandboxError is the waiting reason of every container not
// running while the pod's sandbox cannot be created (CNI, namespaces, state
// record), as the kubelet reports it.
const ReasonCreatePodSandboxError = "CreatePodSandboxError"

// setWaitingAll records the same waiting reason for each container; the
// status shows it on those not running.
func (s *Syncer) setWaitingAll(uid types.UID, containers []*corev1.Container, reason, message string) {
	for _, c := range containers {
		s.setWaiting(uid, c.Name, reason, message)
	}
}

// clearWaitingReason drops the pod's waiting reasons equal to reason.
func (s *Syncer) clearWaitingReason(uid types.UID, reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for name, r := range s.waiting[uid] {
		if r.Reason == reason {
			delete(s.waiting[uid], name)
		}
	}
}

func allContainers(pod *corev1.Pod) []*corev1.Container {
	var out []*corev1.Container
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			out = append(out, &cs[i])
		}
	}
	return out
}

func (s *Syncer) clearWaiting(uid types.UID, container string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.waiting[uid], container)
}

func (s *Syncer) forget(uid types.UID) {
	s.mu.Lock()
	delete(s.waiting, uid)
	s.mu.Unlock()
	s.backoff.forgetPod(uid)
	s.pullBackoff.forgetPod(uid)
	s.prober.Forget(uid)
}

// gracePeriod is the pod's termination grace period, or the override.
func gracePeriod(pod *corev1.Pod, override *int64) time.Duration {
	g := int64(30)
	if pod != nil && pod.Spec.TerminationGracePeriodSeconds != nil {
		g = *pod.Spec.TerminationGracePeriodSeconds
	}
	if override != nil && *override < g {
		g = *override
	}
	return time.Duration(g) * time.Second
}
