package syncer

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// An evicted pod's status is Failed/Evicted with the eviction manager's
// message, through its termination and after, and a later sync (a podhost
// restart: the mark is gone, the last status stays) ends it again instead
// of restarting its containers. Its containers are removed.
func TestSyncPodEvicted(t *testing.T) {
	w := newWorld()
	w.obs.keepLast = true
	pod := worldPod(corev1.RestartPolicyAlways, "a")
	if res, err := syncOnce(t, w, pod); err != nil || res.Terminal {
		t.Fatalf("SyncPod = %+v, %v", res, err)
	}
	const msg = `Container a exceeded its local ephemeral storage limit "1Mi". `
	w.s.MarkEvicted(pod.UID, msg)
	running, _ := w.rt.ListPod(context.Background(), pod.UID)
	if err := w.s.SyncTerminatingPod(context.Background(), pod, running, 1); err != nil {
		t.Fatal(err)
	}
	if g := w.rt.graces[running.Containers[0].ID]; g.Seconds() != 2 {
		t.Fatalf("stopped with grace %s, want 2s (the kubelet's minimum for a container)", g)
	}
	if st := w.obs.last(); st.Phase != corev1.PodFailed || st.Reason != ReasonEvicted || st.Message != msg {
		t.Fatalf("status %s %q %q", st.Phase, st.Reason, st.Message)
	}
	// Still desired, yet its content goes (containers, volumes, logs), as
	// the kubelet's for an evicted pod; the mark with it.
	if err := w.s.SyncTerminatedPod(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	if n := len(w.rt.pods[pod.UID].Containers); n != 0 {
		t.Fatalf("%d containers left after the eviction", n)
	}
	w.rt.calls = nil
	res, err := syncOnce(t, w, pod)
	if err != nil || !res.Terminal {
		t.Fatalf("SyncPod after the eviction = %+v, %v; want terminal", res, err)
	}
	if len(w.rt.calls) != 0 {
		t.Fatalf("runtime calls after the eviction: %q", w.rt.calls)
	}
	if st := w.obs.last(); st.Phase != corev1.PodFailed || st.Reason != ReasonEvicted || st.Message != msg {
		t.Fatalf("status after resync %s %q %q", st.Phase, st.Reason, st.Message)
	}
}
