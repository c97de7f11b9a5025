package syncer

import (
	"errors"
	"fmt"
	"slices"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func waitingReasons(st corev1.PodStatus) map[string]string {
	out := map[string]string{}
	for _, cs := range append(append([]corev1.ContainerStatus{}, st.InitContainerStatuses...), st.ContainerStatuses...) {
		if w := cs.State.Waiting; w != nil {
			out[cs.Name] = w.Reason + ": " + w.Message
		}
	}
	return out
}

func TestSandboxFailureShowsInContainerStatuses(t *testing.T) {
	w := newWorld()
	pod := worldPod(corev1.RestartPolicyAlways, "app")
	pod.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "img", Command: []string{"true"}}}
	enospc := fmt.Errorf("write state.db: %w", syscall.ENOSPC)
	for _, step := range []struct {
		name string
		fail map[string]error
		want map[string]string
	}{
		{name: "ENOSPC recording the sandbox", fail: map[string]error{"put1": enospc}, want: map[string]string{
			"init": "CreatePodSandboxError: record sandbox: write state.db: no space left on device",
			"app":  "CreatePodSandboxError: record sandbox: write state.db: no space left on device"}},
		{name: "CNI failure", fail: map[string]error{"network": errors.New(`plugin type="bridge" failed (add): boom`)}, want: map[string]string{
			"init": `CreatePodSandboxError: set up pod network: plugin type="bridge" failed (add): boom`,
			"app":  `CreatePodSandboxError: set up pod network: plugin type="bridge" failed (add): boom`}},
		{name: "sandbox made, volumes fail", fail: map[string]error{"volumes": enospc}, want: map[string]string{
			"init": "CreateContainerConfigError: volumes: write state.db: no space left on device",
			"app":  "PodInitializing: "}},
	} {
		w.host.mu.Lock()
		w.host.fail, w.host.puts = step.fail, 0
		w.host.mu.Unlock()
		if _, err := syncOnce(t, w, pod); err == nil {
			t.Fatalf("%s: SyncPod succeeded", step.name)
		}
		if got := waitingReasons(w.obs.last()); fmt.Sprint(got) != fmt.Sprint(step.want) {
			t.Errorf("%s: waiting\n%q\nwant\n%q", step.name, got, step.want)
		}
	}
}

// A data volume kept at its last contents (its ConfigMap went away) is a
// FailedMount warning, not a blocked start: the container starts, as the
// kubelet's failed remount of a mounted volume.
func TestVolumeWarningStartsTheContainer(t *testing.T) {
	w := newWorld()
	pod := worldPod(corev1.RestartPolicyAlways, "app")
	msg := `MountVolume.SetUp failed for volume "cfg" : configmap "app" not found`
	w.host.fail["volume-warning"] = errors.New(msg)
	if _, err := syncOnce(t, w, pod); err != nil {
		t.Fatalf("SyncPod: %v", err)
	}
	if st := w.obs.last(); len(st.ContainerStatuses) != 1 || st.ContainerStatuses[0].State.Running == nil {
		t.Errorf("app not running: %+v", st.ContainerStatuses)
	}
	if ev := w.obs.eventList(); !slices.Contains(ev, "Warning FailedMount "+msg) {
		t.Errorf("events %q, want the FailedMount warning", ev)
	}
}

// A same-UID update that toggles hostNetwork gets a new sandbox (the
// kubelet's podSandboxChanged: the network namespace mode differs), its
// containers killed and started again in it; an unchanged pod keeps its
// sandbox.
func TestHostNetworkToggleMakesANewSandbox(t *testing.T) {
	w := newWorld()
	pod := worldPod(corev1.RestartPolicyAlways, "a")
	for i := 0; i < 2; i++ {
		if _, err := syncOnce(t, w, pod); err != nil {
			t.Fatal(err)
		}
	}
	first, _ := w.s.currentSandbox(pod.UID)
	oldID := w.idOf(pod.UID, "a")
	if _, err := syncOnce(t, w, pod); err != nil {
		t.Fatal(err)
	}
	if sb, _ := w.s.currentSandbox(pod.UID); sb.ID != first.ID || w.idOf(pod.UID, "a") != oldID {
		t.Fatal("an unchanged pod got a new sandbox or container")
	}
	pod.Spec.HostNetwork = true
	for i := 0; i < 3; i++ {
		if _, err := syncOnce(t, w, pod); err != nil {
			t.Fatal(err)
		}
	}
	sb, ready := w.s.currentSandbox(pod.UID)
	if sb.ID == first.ID || !ready || sb.NetNS != "" {
		t.Fatalf("sandbox %+v (ready %v), want a new host-network one, not %s", sb, ready, first.ID)
	}
	if id := w.idOf(pod.UID, "a"); id == "" || id == oldID {
		t.Fatalf("container a: %q, want a new instance (was %s)", id, oldID)
	}
}
