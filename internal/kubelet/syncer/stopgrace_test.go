package syncer

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/kubelet/prober"
)

// Every stop gives the stop signal at least 2 s, as the kubelet's
// killContainer ("always give containers a minimal shutdown window"): a
// grace period of 0 (or 1) is not a SIGKILL at once, with or without a
// preStop hook, whatever asked for the stop.
func TestEveryStopGetsTheMinimumWindow(t *testing.T) {
	zero := int64(0)
	for _, tc := range []struct {
		name     string
		preStop  string // hook command ("" for none)
		failPost bool   // a postStart hook that fails
		stop     func(t *testing.T, w *world, pod *corev1.Pod, id string)
	}{
		{name: "termination, grace 0", stop: func(t *testing.T, w *world, pod *corev1.Pod, _ string) {
			if err := w.s.SyncTerminatingPod(context.Background(), pod, nil, 0); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "termination, grace 1 (the pod workers' least)", stop: func(t *testing.T, w *world, pod *corev1.Pod, _ string) {
			if err := w.s.SyncTerminatingPod(context.Background(), pod, nil, 1); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "liveness kill, pod grace 0", stop: func(t *testing.T, w *world, pod *corev1.Pod, id string) {
			w.prb.set("a", prober.Unhealthy{ContainerID: id, Reason: prober.ReasonLiveness})
			if _, err := syncOnce(t, w, pod); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "startup kill, probe grace 0", stop: func(t *testing.T, w *world, pod *corev1.Pod, id string) {
			pod.Spec.Containers[0].StartupProbe = &corev1.Probe{TerminationGracePeriodSeconds: &zero}
			w.prb.set("a", prober.Unhealthy{ContainerID: id, Reason: prober.ReasonStartup})
			if _, err := syncOnce(t, w, pod); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "orphan, grace label 0", stop: func(t *testing.T, w *world, pod *corev1.Pod, _ string) {
			running, _ := w.rt.ListPod(context.Background(), pod.UID)
			if err := w.s.SyncTerminatingRuntimePod(context.Background(), running); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "preStop hook, grace 0: no hook, still 2 s", preStop: "prestop", stop: func(t *testing.T, w *world, pod *corev1.Pod, _ string) {
			if err := w.s.SyncTerminatingPod(context.Background(), pod, nil, 0); err != nil {
				t.Fatal(err)
			}
			if runs := w.hooks.list(); len(runs) != 0 {
				t.Fatalf("preStop ran with no grace left: %q", runs)
			}
		}},
		{name: "postStart failure, pod grace 0", failPost: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld()
			post := ""
			if tc.failPost {
				post = "poststart"
				w.hooks.fail["poststart"] = true
			}
			pod := hookPod(tc.preStop, post, "a")
			pod.Spec.TerminationGracePeriodSeconds = &zero
			_, err := syncOnce(t, w, pod)
			id := w.idOf(pod.UID, "a")
			if tc.failPost {
				if err == nil {
					t.Fatal("postStart failure: no error")
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				tc.stop(t, w, pod, id)
			}
			if w.rt.stopCount(id) != 1 || w.rt.graceOf(id) != minStopGrace {
				t.Fatalf("stops %d with grace %v, want 1 with %v", w.rt.stopCount(id), w.rt.graceOf(id), minStopGrace)
			}
		})
	}
}
