package syncer

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// sidecarWorldPod: init containers s1 (sidecar with a startupProbe), i1
// (regular) and s2 (sidecar), then the app container a.
func sidecarWorldPod(policy corev1.RestartPolicy) *corev1.Pod {
	pod := worldPod(policy, "a")
	always := corev1.ContainerRestartPolicyAlways
	probe := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}
	for _, n := range []string{"s1", "i1", "s2"} {
		c := corev1.Container{Name: n, Image: "busybox:1", Command: []string{"sleep", "1000"}, ImagePullPolicy: corev1.PullIfNotPresent}
		if n != "i1" {
			c.RestartPolicy = &always
		}
		if n == "s1" {
			c.StartupProbe = probe
		}
		pod.Spec.InitContainers = append(pod.Spec.InitContainers, c)
	}
	return pod
}

// startedSince syncs once and returns the names of the containers started since the last call.
func (w *world) startedSince(t *testing.T, pod *corev1.Pod) []string {
	t.Helper()
	if _, err := syncOnce(t, w, pod); err != nil {
		t.Fatalf("SyncPod: %v", err)
	}
	var out []string
	for _, c := range w.rt.calls {
		if n, ok := strings.CutPrefix(c, "start "); ok {
			out = append(out, n)
		}
	}
	w.rt.calls = nil
	return out
}

func (w *world) idOf(uid types.UID, name string) string {
	p, _ := w.rt.ListPod(context.Background(), uid)
	if c := p.Find(name); c != nil {
		return c.ID
	}
	return ""
}

func TestSyncPodSidecarsStartInOrderAndRestart(t *testing.T) {
	w := newWorld()
	pod := sidecarWorldPod(corev1.RestartPolicyNever)
	steps := []struct {
		before func()
		want   []string
	}{
		{nil, []string{"s1"}},
		{nil, nil}, // s1's startup probe has not succeeded
		{func() { w.prb.setStarted("s1", true) }, []string{"i1"}},
		{nil, nil}, // i1 runs
		{func() { w.rt.exit(w.idOf("uid-1", "i1"), 0) }, []string{"s2"}},
		{nil, []string{"a"}},
		{func() { w.rt.exit(w.idOf("uid-1", "s2"), 1) }, []string{"s2"}}, // restarts under Never
	}
	for i, st := range steps {
		if st.before != nil {
			st.before()
		}
		if got := w.startedSince(t, pod); !slices.Equal(got, st.want) {
			t.Fatalf("step %d: started %q, want %q", i, got, st.want)
		}
	}
	status := w.obs.last()
	if len(status.InitContainerStatuses) != 3 || status.InitContainerStatuses[2].RestartCount != 1 ||
		status.InitContainerStatuses[2].State.Running == nil {
		t.Fatalf("init statuses %+v", status.InitContainerStatuses)
	}
	// The app container finishes: the pod is done, the sidecars are not
	// restarted and the phase stays Running until they are stopped.
	w.rt.exit(w.idOf("uid-1", "a"), 0)
	w.rt.exit(w.idOf("uid-1", "s1"), 2)
	res, err := syncOnce(t, w, pod)
	if err != nil || !res.Terminal {
		t.Fatalf("SyncPod = %+v, %v; want terminal", res, err)
	}
	if slices.Contains(w.rt.calls, "start s1") {
		t.Fatalf("a sidecar restarted after the app container finished: %q", w.rt.calls)
	}
	if got := w.obs.last().Phase; got != corev1.PodRunning {
		t.Fatalf("phase %s while sidecar s2 runs, want Running", got)
	}
	running, _ := w.rt.ListPod(context.Background(), pod.UID)
	if err := w.s.SyncTerminatingPod(context.Background(), pod, running, 5); err != nil {
		t.Fatal(err)
	}
	if got := w.obs.last().Phase; got != corev1.PodSucceeded {
		t.Fatalf("phase %s, want Succeeded (from the app container)", got)
	}
}

// Termination: the regular containers first, then the sidecars in reverse
// order of declaration.
func TestSyncTerminatingPodStopsSidecarsLastInReverseOrder(t *testing.T) {
	w := newWorld()
	pod := sidecarWorldPod(corev1.RestartPolicyAlways)
	w.prb.setStarted("s1", true)
	for i := 0; i < 5; i++ {
		if i == 2 {
			w.rt.exit(w.idOf("uid-1", "i1"), 0)
		}
		if _, err := syncOnce(t, w, pod); err != nil {
			t.Fatal(err)
		}
	}
	running, _ := w.rt.ListPod(context.Background(), pod.UID)
	if n := len(running.Running()); n != 3 {
		t.Fatalf("%d running, want s1, s2 and a", n)
	}
	if err := w.s.SyncTerminatingPod(context.Background(), pod, running, 5); err != nil {
		t.Fatal(err)
	}
	if want := []string{"a", "s2", "s1"}; !slices.Equal(w.rt.stopOrder, want) {
		t.Fatalf("stop order %q, want %q", w.rt.stopOrder, want)
	}
	for _, c := range running.Running() {
		if g := w.rt.graces[c.ID]; g <= 0 || g > gracePeriod(pod, nil) {
			t.Fatalf("%s stopped with grace %s", c.Name, g)
		}
	}
	if st := w.obs.last().InitContainerStatuses[0]; st.State.Terminated == nil {
		t.Fatalf("s1 status %+v, want terminated", st)
	}
}
