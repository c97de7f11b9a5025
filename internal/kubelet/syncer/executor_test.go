package syncer

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/kubelet/podworkers"
	"github.com/podhost/podhost/internal/kubelet/prober"
	"github.com/podhost/podhost/internal/model/podstate"
	"github.com/podhost/podhost/internal/model/wellknown"
)

func syncOnce(t *testing.T, w *world, pod *corev1.Pod) (podworkers.SyncResult, error) {
	t.Helper()
	running, _ := w.rt.ListPod(context.Background(), pod.UID)
	return w.s.SyncPod(context.Background(), podworkers.SyncPodSync, pod, running)
}

// syncedWorld: a world whose pod of containers names has had its first sync.
func syncedWorld(t *testing.T, policy corev1.RestartPolicy, names ...string) (*world, *corev1.Pod) {
	t.Helper()
	w := newWorld()
	pod := worldPod(policy, names...)
	if _, err := syncOnce(t, w, pod); err != nil {
		t.Fatal(err)
	}
	return w, pod
}

func TestSyncPodStartsANewPod(t *testing.T) {
	w := newWorld()
	pod := worldPod(corev1.RestartPolicyAlways, "a", "b")
	res, err := syncOnce(t, w, pod)
	if err != nil || res.Terminal || !res.Settled { // listed again after the starts
		t.Fatalf("SyncPod = %+v, %v", res, err)
	}
	want := []string{"pull busybox:1", "create a", "start a", "pull busybox:1", "create b", "start b"}
	if !slices.Equal(w.rt.calls, want) {
		t.Fatalf("calls %q, want %q", w.rt.calls, want)
	}
	if len(w.host.sandboxes) != 1 {
		t.Fatalf("sandboxes %v", w.host.sandboxes)
	}
	st := w.obs.last()
	if st.PodIP != "10.89.0.2" || len(st.ContainerStatuses) != 2 || st.ContainerStatuses[0].State.Running == nil {
		t.Fatalf("status %+v", st)
	}
	// Nothing to do on the next sync: no call to the runtime but lists.
	w.rt.calls = nil
	if _, err := syncOnce(t, w, pod); err != nil || len(w.rt.calls) != 0 {
		t.Fatalf("second sync: calls %q err %v", w.rt.calls, err)
	}
}

// Each failing step of sandbox creation leaves no sandbox record and
// releases what the earlier steps made.
func TestSyncPodSandboxRollback(t *testing.T) {
	for _, step := range []string{"sandbox", "network", "hosts", "put2", "put3"} {
		t.Run(step, func(t *testing.T) {
			w := newWorld()
			w.host.fail[step] = errors.New("injected " + step + " failure")
			pod := worldPod(corev1.RestartPolicyAlways, "a")
			if res, err := syncOnce(t, w, pod); err == nil || !strings.Contains(err.Error(), "injected") || res.Settled {
				t.Fatalf("SyncPod = %+v, %v", res, err)
			}
			if len(w.host.sandboxes) != 0 {
				t.Fatalf("sandbox records left: %v", w.host.sandboxes)
			}
			if len(w.host.removed) != 1 {
				t.Fatalf("sandbox dirs removed %v, want the one made", w.host.removed)
			}
			if len(w.rt.calls) != 0 {
				t.Fatalf("containers made without a sandbox: %q", w.rt.calls)
			}
			if ev := w.obs.eventList(); len(ev) == 0 || !strings.HasPrefix(ev[len(ev)-1], "Warning FailedCreatePodSandBox") {
				t.Fatalf("events %q", ev)
			}
			// Once the fault is gone the next sync succeeds.
			delete(w.host.fail, step)
			if _, err := syncOnce(t, w, pod); err != nil || len(w.host.sandboxes) != 1 {
				t.Fatalf("retry: %v, sandboxes %v", err, w.host.sandboxes)
			}
		})
	}
}

// Crash-loop back-off: the first restart is immediate, the second waits and
// asks the worker for a sync when the back-off ends (no timer of its own).
func TestSyncPodCrashLoopRequeue(t *testing.T) {
	w := newWorld()
	pod := worldPod(corev1.RestartPolicyAlways, "a")
	if _, err := syncOnce(t, w, pod); err != nil {
		t.Fatal(err)
	}
	first := w.rt.pods[pod.UID].Containers[0].ID
	w.rt.exit(first, 1)
	if res, err := syncOnce(t, w, pod); err != nil || res.RequeueAfter != 0 {
		t.Fatalf("first restart: %+v %v", res, err)
	}
	second := w.rt.pods[pod.UID].Containers[1]
	if second.RestartCount != 1 {
		t.Fatalf("restart count %d", second.RestartCount)
	}
	w.rt.exit(second.ID, 1)
	w.now = w.now.Add(time.Second)
	res, err := syncOnce(t, w, pod)
	if err != nil || res.RequeueAfter < 8*time.Second || res.RequeueAfter > 10*time.Second {
		t.Fatalf("in back-off: %+v %v", res, err)
	}
	if n := len(w.rt.pods[pod.UID].Containers); n != 2 {
		t.Fatalf("%d containers: restarted inside the back-off", n)
	}
	if st := w.obs.last(); st.ContainerStatuses[0].State.Waiting == nil || st.ContainerStatuses[0].State.Waiting.Reason != "CrashLoopBackOff" {
		t.Fatalf("status %+v", st.ContainerStatuses[0].State)
	}
}

// The crash-loop window runs from the container's exit, not from its
// restart: a container that ran 30 s after an immediate restart and then
// exited again waits the 10 s window from that exit.
func TestSyncPodCrashLoopWindowFromExit(t *testing.T) {
	w := newWorld()
	pod := worldPod(corev1.RestartPolicyAlways, "a")
	if _, err := syncOnce(t, w, pod); err != nil {
		t.Fatal(err)
	}
	w.rt.exit(w.rt.pods[pod.UID].Containers[0].ID, 1)
	if res, err := syncOnce(t, w, pod); err != nil || res.RequeueAfter != 0 {
		t.Fatalf("first restart: %+v %v", res, err)
	}
	w.now = w.now.Add(30 * time.Second) // runs 30 s: beyond the window counted from the restart
	w.rt.exit(w.rt.pods[pod.UID].Containers[1].ID, 1)
	w.now = w.now.Add(2 * time.Second)
	res, err := syncOnce(t, w, pod)
	if err != nil || res.RequeueAfter != 8*time.Second+50*time.Millisecond {
		t.Fatalf("want back-off of 8 s left from the exit: %+v %v", res, err)
	}
	if n := len(w.rt.pods[pod.UID].Containers); n != 2 {
		t.Fatalf("%d containers: restarted inside the window that runs from the exit", n)
	}
	w.now = w.now.Add(8 * time.Second)
	if res, err := syncOnce(t, w, pod); err != nil || res.RequeueAfter != 0 {
		t.Fatalf("after the window: %+v %v", res, err)
	}
	cs := w.rt.pods[pod.UID].Containers
	if last := cs[len(cs)-1]; last.RestartCount != 2 || last.State != podstate.StateRunning {
		t.Fatalf("after the window: last container %+v, want the second restart running", last)
	}
}

func TestSyncPodImagePullBackoffRequeue(t *testing.T) {
	w := newWorld()
	w.rt.pullErr = errors.New("registry down")
	pod := worldPod(corev1.RestartPolicyAlways, "a")
	res, err := syncOnce(t, w, pod)
	if err == nil || res.RequeueAfter < 10*time.Second {
		t.Fatalf("pull failure: %+v %v", res, err)
	}
}

// A failed liveness probe: the worker's own sync kills the container (the
// probe's grace period, a Killing event) and restarts it per policy.
func TestSyncPodKillsAndRestartsUnhealthyContainer(t *testing.T) {
	w := newWorld()
	pod := worldPod(corev1.RestartPolicyAlways, "a")
	probeGrace := int64(2)
	pod.Spec.Containers[0].LivenessProbe = &corev1.Probe{TerminationGracePeriodSeconds: &probeGrace}
	if _, err := syncOnce(t, w, pod); err != nil {
		t.Fatal(err)
	}
	old := w.rt.pods[pod.UID].Containers[0].ID
	w.prb.set("a", prober.Unhealthy{ContainerID: old, Reason: prober.ReasonLiveness})
	if _, err := syncOnce(t, w, pod); err != nil {
		t.Fatal(err)
	}
	if w.rt.stopCount(old) != 1 || w.rt.graces[old] != 2*time.Second {
		t.Fatalf("stops %v graces %v", w.rt.stops, w.rt.graces)
	}
	cs := w.rt.pods[pod.UID].Containers
	if len(cs) != 2 || cs[1].RestartCount != 1 || cs[1].State != "running" {
		t.Fatalf("containers after the kill: %+v", cs)
	}
	if !slices.Contains(w.obs.eventList(), "Normal Killing Container a failed liveness probe, will be restarted") {
		t.Fatalf("events %q", w.obs.eventList())
	}
	// The prober still reports the old instance: it is not killed again.
	if _, err := syncOnce(t, w, pod); err != nil || w.rt.stopCount(cs[1].ID) != 0 {
		t.Fatalf("new instance stopped: %v", err)
	}
}

// Under OnFailure a container killed for a failed liveness probe restarts
// in the same sync even when it exits 0 on SIGTERM (kubelet
// computePodActions: restart := shouldRestartOnFailure(pod)); the pod does
// not end Succeeded.
func TestSyncPodUnhealthyOnFailureRestartsAfterCleanExit(t *testing.T) {
	w, pod := syncedWorld(t, corev1.RestartPolicyOnFailure, "a")
	old := w.rt.pods[pod.UID].Containers[0].ID
	w.rt.stopExit = new(int32) // traps SIGTERM, exits 0
	w.prb.set("a", prober.Unhealthy{ContainerID: old, Reason: prober.ReasonLiveness})
	res, err := syncOnce(t, w, pod)
	if err != nil || res.Terminal {
		t.Fatalf("SyncPod = %+v, %v", res, err)
	}
	cs := w.rt.pods[pod.UID].Containers
	if w.rt.stopCount(old) != 1 || len(cs) != 2 || cs[1].RestartCount != 1 || cs[1].State != podstate.StateRunning {
		t.Fatalf("containers after the kill: %+v", cs)
	}
	if st := w.obs.last(); st.Phase != corev1.PodRunning {
		t.Fatalf("phase %s, want Running", st.Phase)
	}
}

// After a hard reboot (the sandbox is of another boot; the runtime reports
// the container that ran as exited 255 "Unknown") an OnFailure pod gets a
// new sandbox and its failed container restarts (kubelet computePodActions,
// createPodSandbox): the pod is not finished.
func TestSyncPodOnFailureAfterRebootRestarts(t *testing.T) {
	w, pod := syncedWorld(t, corev1.RestartPolicyOnFailure, "a")
	for id, r := range w.host.sandboxes {
		r.BootID = "boot0"
		w.host.sandboxes[id] = r
	}
	old := w.rt.pods[pod.UID].Containers[0].ID
	w.rt.exit(old, 255)
	res, err := syncOnce(t, w, pod)
	if err != nil || res.Terminal {
		t.Fatalf("SyncPod = %+v, %v", res, err)
	}
	c := w.rt.pods[pod.UID].Find("a")
	if c.ID == old || c.State != podstate.StateRunning || c.RestartCount != 1 {
		t.Fatalf("container after the reboot: %+v", c)
	}
}

func TestSyncPodUnhealthyWithRestartPolicyNeverEndsThePod(t *testing.T) {
	w, pod := syncedWorld(t, corev1.RestartPolicyNever, "a")
	id := w.rt.pods[pod.UID].Containers[0].ID
	w.prb.set("a", prober.Unhealthy{ContainerID: id, Reason: prober.ReasonLiveness})
	res, err := syncOnce(t, w, pod)
	if err != nil || !res.Terminal || len(w.rt.pods[pod.UID].Containers) != 1 {
		t.Fatalf("%+v %v containers %d", res, err, len(w.rt.pods[pod.UID].Containers))
	}
}

// Terminating then terminated, no longer desired: containers, sandbox,
// cgroup and records all go.
func TestTerminationCleansUp(t *testing.T) {
	w := newWorld()
	pod := worldPod(corev1.RestartPolicyAlways, "a", "b")
	if _, err := syncOnce(t, w, pod); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	running, _ := w.rt.ListPod(ctx, pod.UID)
	if err := w.s.SyncTerminatingPod(ctx, pod, running, 5); err != nil {
		t.Fatal(err)
	}
	w.obs.desired = false
	if err := w.s.SyncTerminatedPod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if n := len(w.rt.pods[pod.UID].Containers); n != 0 {
		t.Fatalf("%d containers left", n)
	}
	if len(w.host.sandboxes) != 0 || len(w.host.teardowns) != 1 || len(w.host.cgroups) != 0 {
		t.Fatalf("left: sandboxes %v teardowns %v cgroups %v", w.host.sandboxes, w.host.teardowns, w.host.cgroups)
	}
}

// A finished pod's last status is that of a stopped sandbox, as the
// kubelet's SyncTerminatingPod regenerates it after killPod:
// PodReadyToStartContainers False, the pod IP kept; SyncTerminatedPod of a
// still desired pod does not turn it True again.
func TestFinishedPodIsNotReadyToStartContainers(t *testing.T) {
	w, pod := syncedWorld(t, corev1.RestartPolicyNever, "a")
	w.rt.exit(w.rt.pods[pod.UID].Containers[0].ID, 0)
	if res, err := syncOnce(t, w, pod); err != nil || !res.Terminal {
		t.Fatalf("SyncPod = %+v, %v", res, err)
	}
	ctx := context.Background()
	running, _ := w.rt.ListPod(ctx, pod.UID)
	if err := w.s.SyncTerminatingPod(ctx, pod, running, 5); err != nil {
		t.Fatal(err)
	}
	checkStopped := func(step string) {
		t.Helper()
		st := w.obs.last()
		for _, c := range st.Conditions {
			if c.Type == corev1.PodReadyToStartContainers && c.Status != corev1.ConditionFalse {
				t.Fatalf("%s: PodReadyToStartContainers %s, want False", step, c.Status)
			}
		}
		if st.PodIP != "10.89.0.2" || st.Phase != corev1.PodSucceeded {
			t.Fatalf("%s: pod IP %q phase %s", step, st.PodIP, st.Phase)
		}
	}
	checkStopped("terminating")
	if err := w.s.SyncTerminatedPod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	checkStopped("terminated")
}

// lifecycle.stopSignal is recorded for the runtime's stop, over the image's.
func TestSyncPodRecordsLifecycleStopSignal(t *testing.T) {
	w := newWorld()
	pod := worldPod(corev1.RestartPolicyAlways, "a")
	sig := corev1.SIGUSR1
	pod.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{StopSignal: &sig}
	if _, err := syncOnce(t, w, pod); err != nil {
		t.Fatal(err)
	}
	if got := w.rt.pods[pod.UID].Containers[0].Labels[wellknown.LabelStopSignal]; got != "SIGUSR1" {
		t.Fatalf("stop-signal label %q", got)
	}
}
