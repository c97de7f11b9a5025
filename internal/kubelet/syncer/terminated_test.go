package syncer

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// terminateAll stops pod's containers (terminate: SyncTerminatingPod) and
// runs SyncTerminatedPod.
func terminateAll(t *testing.T, w *world, pod *corev1.Pod) error {
	t.Helper()
	if err := terminate(w, pod); err != nil {
		t.Fatal(err)
	}
	return w.s.SyncTerminatedPod(context.Background(), pod)
}

// A termination resumed at start ends before the first manifest snapshot
// says whether the pod is still wanted: its exited containers stay (a
// finished pod the manifests want keeps them; housekeeping removes those of
// a deleted one as orphans), its sandbox and cgroup go.
func TestTerminatedPodKeepsContainersBeforeSourcesReady(t *testing.T) {
	w, pod := syncedWorld(t, corev1.RestartPolicyNever, "a")
	w.obs.desired, w.obs.notReady = false, true
	if err := terminateAll(t, w, pod); err != nil {
		t.Fatal(err)
	}
	if n := len(w.rt.pods[pod.UID].Containers); n != 1 {
		t.Fatalf("%d containers left, want the exited one kept", n)
	}
	if len(w.host.sandboxes) != 0 || len(w.host.cgroups) != 0 {
		t.Fatalf("left: sandboxes %v cgroups %v", w.host.sandboxes, w.host.cgroups)
	}
}
