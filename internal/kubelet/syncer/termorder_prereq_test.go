package syncer

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/model/podstate"
)

// gatedStops is the fake runtime whose stops report when they begin and,
// for the containers in gate, last until the gate is closed (a process
// that ignores the stop signal).
type gatedStops struct {
	*fakeRuntime
	gate  map[string]chan struct{}
	began chan string
}

func (g *gatedStops) StopContainer(ctx context.Context, id string, grace time.Duration) error {
	g.began <- id
	if ch := g.gate[id]; ch != nil {
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return g.fakeRuntime.StopContainer(ctx, id, grace)
}

// Termination while a regular init container runs: the sidecar before it
// is stopped at once, not after the init container exits (the kubelet's
// newTerminationOrdering: a sidecar waits only for the app containers and
// the later sidecars).
func TestTerminationDoesNotWaitForRegularInitContainers(t *testing.T) {
	w := newWorld()
	pod := sidecarWorldPod(corev1.RestartPolicyAlways)
	if got := w.startedSince(t, pod); !slices.Equal(got, []string{"s1"}) {
		t.Fatalf("started %q", got)
	}
	w.prb.setStarted("s1", true)
	if got := w.startedSince(t, pod); !slices.Equal(got, []string{"i1"}) {
		t.Fatalf("started %q", got)
	}
	i1, s1 := w.idOf(pod.UID, "i1"), w.idOf(pod.UID, "s1")
	release := make(chan struct{})
	g := &gatedStops{fakeRuntime: w.rt, gate: map[string]chan struct{}{i1: release}, began: make(chan string, 4)}
	w.s.rt = g
	done := make(chan error, 1)
	go func() { done <- w.s.SyncTerminatingPod(context.Background(), pod, nil, 30) }()
	var began []string
	for len(began) < 2 {
		select {
		case id := <-g.began:
			began = append(began, id)
		case <-time.After(5 * time.Second):
			t.Fatalf("stops begun %q while i1 ignores its signal; want i1 and s1", began)
		}
	}
	want := []string{i1, s1}
	slices.Sort(began)
	slices.Sort(want)
	if !slices.Equal(began, want) {
		t.Fatalf("stops begun %q, want %q", began, want)
	}
	select {
	case err := <-done:
		t.Fatalf("termination ended (%v) while i1 still runs", err)
	default:
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if g := w.rt.graceOf(s1); g != 30*time.Second {
		t.Fatalf("s1 stopped with grace %v, want the whole 30s", g)
	}
}

// The termination order: a sidecar waits for the app containers and the
// next sidecar declared after it; app and regular init containers wait for
// nothing; an orphan's containers wait for nothing.
func TestTermOrderPrereqs(t *testing.T) {
	pod := sidecarWorldPod(corev1.RestartPolicyAlways)
	cs := []*podstate.Container{{Name: "s2", Init: true}, {Name: "a"}, {Name: "i1", Init: true}, {Name: "s1", Init: true}}
	o := newTermOrder(pod, cs)
	for name, want := range map[string]int{"a": 0, "i1": 0, "s2": 1, "s1": 2} {
		if got := len(o.prereq[name]); got != want {
			t.Fatalf("%s waits for %d containers, want %d", name, got, want)
		}
	}
	if o.prereq["s1"][1] != o.done["s2"] {
		t.Fatal("s1 does not wait for s2")
	}
	if len(newTermOrder(nil, cs).prereq) != 0 {
		t.Fatal("an orphan's containers wait for each other")
	}
}
