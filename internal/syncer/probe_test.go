package syncer

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/podstate"
)

type probeRuntime struct {
	Runtime // only ListPods and StopContainer are used
	pods    []*podstate.Pod
	stopped map[string]time.Duration
}

func (r *probeRuntime) ListPods(context.Context) ([]*podstate.Pod, error) { return r.pods, nil }

func (r *probeRuntime) StopContainer(_ context.Context, id string, grace time.Duration) error {
	r.stopped[id] = grace
	return nil
}

type probeObserver struct {
	Observer
	desired bool
	events  []string
}

func (o *probeObserver) Event(_ types.UID, typ, reason, msg string) {
	o.events = append(o.events, typ+" "+reason+" "+msg)
}
func (o *probeObserver) IsDesired(types.UID) bool { return o.desired }

type probeWaker struct{ woken []types.UID }

func (w *probeWaker) Wake(uid types.UID) bool { w.woken = append(w.woken, uid); return true }

func TestKillContainer(t *testing.T) {
	grace, probeGrace := int64(7), int64(2)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "u1"},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyAlways, TerminationGracePeriodSeconds: &grace,
			Containers: []corev1.Container{{Name: "app",
				LivenessProbe: &corev1.Probe{}, StartupProbe: &corev1.Probe{TerminationGracePeriodSeconds: &probeGrace}}}},
	}
	rt := &probeRuntime{stopped: map[string]time.Duration{}, pods: []*podstate.Pod{{UID: "u1", Containers: []*podstate.Container{
		{ID: "c1", Name: "app", State: podstate.StateRunning},
		{ID: "c0", Name: "app", State: podstate.StateExited},
	}}}}
	obs, wk := &probeObserver{desired: true}, &probeWaker{}
	s := New(Config{}, Deps{Runtime: rt, Observer: obs, Waker: wk})
	ctx := context.Background()

	if err := s.KillContainer(ctx, pod, "c1", "app", "liveness"); err != nil {
		t.Fatal(err)
	}
	if rt.stopped["c1"] != 7*time.Second || len(wk.woken) != 1 {
		t.Fatalf("stopped %v woken %v", rt.stopped, wk.woken)
	}
	if want := "Normal Killing Container app failed liveness probe, will be restarted"; len(obs.events) != 1 || obs.events[0] != want {
		t.Fatalf("events %q", obs.events)
	}
	if err := s.KillContainer(ctx, pod, "c1", "app", "startup"); err != nil || rt.stopped["c1"] != 2*time.Second {
		t.Fatalf("startup: probe grace not used: %v %v", rt.stopped, err)
	}
	pod.Spec.RestartPolicy = corev1.RestartPolicyNever
	_ = s.KillContainer(ctx, pod, "c1", "app", "liveness")
	if last := obs.events[len(obs.events)-1]; last != "Normal Killing Container app failed liveness probe" {
		t.Fatalf("restartPolicy Never: %q", last)
	}

	// An exited container, or a pod no longer desired, is left alone.
	rt.stopped = map[string]time.Duration{}
	_ = s.KillContainer(ctx, pod, "c0", "app", "liveness")
	obs.desired = false
	_ = s.KillContainer(ctx, pod, "c1", "app", "liveness")
	if len(rt.stopped) != 0 {
		t.Fatalf("stopped %v", rt.stopped)
	}
}
