package syncer

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/kubelet/podcache"
	"github.com/podhost/podhost/internal/kubelet/podworkers"
	"github.com/podhost/podhost/internal/kubelet/prober"
)

// terminatedSignal wraps the syncer to tell when the pod's cleanup ran.
type terminatedSignal struct {
	*Syncer
	done chan struct{}
	once sync.Once
}

func (h *terminatedSignal) SyncTerminatedPod(ctx context.Context, pod *corev1.Pod) error {
	err := h.Syncer.SyncTerminatedPod(ctx, pod)
	if err == nil {
		h.once.Do(func() { close(h.done) })
	}
	return err
}

// A liveness failure, a manifest delete and the container's own exit
// arriving together on one pod: the pod's worker is its only actor, so each
// container is stopped exactly once (run with -race -count=200).
func TestOneActorPerPodRace(t *testing.T) {
	w := newWorld()
	pod := worldPod(corev1.RestartPolicyAlways, "a", "b")
	pod.Spec.Containers[0].LivenessProbe = &corev1.Probe{}
	h := &terminatedSignal{Syncer: w.s, done: make(chan struct{})}
	pc := podcache.New(w.rt, nil)
	w.s.cache = pc // one cache for the syncer and the workers, as in the daemon
	pw := podworkers.New(h, podworkers.Options{
		Cache: pc, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		BackoffBase: time.Millisecond, BackoffMax: 5 * time.Millisecond,
	})
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := pw.Shutdown(ctx); err != nil {
			t.Error(err)
		}
		w.s.Close()
	}()
	started := make(chan struct{})
	w.rt.onStart = func() { close(started) }
	pw.UpdatePod(podworkers.UpdatePodOptions{Type: podworkers.SyncPodCreate, Pod: pod})
	waitFor(t, started, "both containers started")

	gate := make(chan struct{})
	stopping := make(chan struct{})
	w.rt.mu.Lock()
	w.rt.stopGate, w.rt.onStop = gate, func() { close(stopping) }
	a := w.rt.pods[pod.UID].Containers[0].ID
	b := w.rt.pods[pod.UID].Containers[1].ID
	w.rt.mu.Unlock()
	w.obs.mu.Lock()
	w.obs.desired = false // the manifest is being deleted
	w.obs.mu.Unlock()

	w.prb.set("a", prober.Unhealthy{ContainerID: a, Reason: prober.ReasonLiveness})
	pw.Wake(pod.UID) // the prober's update
	waitFor(t, stopping, "liveness kill")
	var wg sync.WaitGroup
	wg.Add(3)
	go func() {
		defer wg.Done()
		pw.UpdatePod(podworkers.UpdatePodOptions{Type: podworkers.SyncPodKill, Pod: pod})
	}()
	go func() { defer wg.Done(); w.rt.exit(a, 1); pw.Wake(pod.UID) }()
	go func() { defer wg.Done(); pw.Wake(pod.UID) }()
	wg.Wait()
	close(gate)
	waitFor(t, h.done, "pod terminated")
	if n := w.rt.stopCount(a); n != 1 {
		t.Fatalf("container a stopped %d times, want 1", n)
	}
	if n := w.rt.stopCount(b); n != 1 {
		t.Fatalf("container b stopped %d times, want 1", n)
	}
}

func waitFor(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}
