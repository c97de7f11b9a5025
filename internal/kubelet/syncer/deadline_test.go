package syncer

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func TestSyncPodActiveDeadline(t *testing.T) {
	w := newWorld()
	w.obs.keepLast = true
	pod := worldPod(corev1.RestartPolicyAlways, "a")
	deadline := int64(10)
	pod.Spec.ActiveDeadlineSeconds = &deadline
	res, err := syncOnce(t, w, pod)
	if err != nil || res.Terminal {
		t.Fatalf("SyncPod = %+v, %v", res, err)
	}
	if res.RequeueAfter < 10*time.Second || res.RequeueAfter > 11*time.Second {
		t.Fatalf("RequeueAfter = %s, want the deadline (10 s)", res.RequeueAfter)
	}
	w.now = w.now.Add(4 * time.Second)
	if res, _ = syncOnce(t, w, pod); res.RequeueAfter < 6*time.Second || res.RequeueAfter > 7*time.Second {
		t.Fatalf("RequeueAfter = %s after 4 s, want 6 s", res.RequeueAfter)
	}
	w.now = w.now.Add(6 * time.Second)
	w.rt.calls = nil
	if res, err = syncOnce(t, w, pod); err != nil || !res.Terminal {
		t.Fatalf("SyncPod at the deadline = %+v, %v; want terminal", res, err)
	}
	if len(w.rt.calls) != 0 {
		t.Fatalf("runtime calls at the deadline: %q", w.rt.calls)
	}
	st := w.obs.last()
	if st.Phase != corev1.PodFailed || st.Reason != ReasonDeadlineExceeded || st.Message != msgDeadlineExceeded {
		t.Fatalf("status %s %q %q", st.Phase, st.Reason, st.Message)
	}
	want := "Normal DeadlineExceeded " + msgDeadlineExceeded
	if !slices.Contains(w.obs.eventList(), want) {
		t.Fatalf("events %q, want %q", w.obs.eventList(), want)
	}
	running, _ := w.rt.ListPod(context.Background(), pod.UID)
	if err := w.s.SyncTerminatingPod(context.Background(), pod, running, 5); err != nil {
		t.Fatal(err)
	}
	if g := w.rt.graces[running.Containers[0].ID]; g != 5*time.Second {
		t.Fatalf("stopped with grace %s, want 5s", g)
	}
	if st := w.obs.last(); st.Phase != corev1.PodFailed || st.Reason != ReasonDeadlineExceeded {
		t.Fatalf("after termination: %s %q", st.Phase, st.Reason)
	}
	// A later sync (e.g. after a podhost restart) is terminal at once and
	// does not record the event again.
	n := len(w.obs.eventList())
	if res, _ = syncOnce(t, w, pod); !res.Terminal || len(w.obs.eventList()) != n {
		t.Fatalf("resync = %+v, events %q", res, w.obs.eventList()[n:])
	}
}
