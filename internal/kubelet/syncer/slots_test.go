package syncer

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/kubelet/podworkers"
)

func TestSlotHold(t *testing.T) {
	bg := context.Background()
	done, cancel := context.WithCancel(bg)
	cancel()
	slots := newStartSlots(1)
	h, err := slots.take(bg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := slots.take(done); !errors.Is(err, context.Canceled) {
		t.Fatalf("second take with the only slot held: %v, want canceled", err)
	}
	h.release()
	other, err := slots.take(bg) // free while h is released
	if err != nil {
		t.Fatal(err)
	}
	if err := h.retake(done); !errors.Is(err, context.Canceled) || h.held {
		t.Fatalf("retake of a slot another holds: %v, held %v", err, h.held)
	}
	other.release()
	if err := h.retake(bg); err != nil || !h.held {
		t.Fatalf("retake: %v, held %v", err, h.held)
	}
	h.release()
	h.release() // a second release frees nothing more
	if _, err := slots.take(bg); err != nil {
		t.Fatal(err)
	}
	if _, err := slots.take(done); !errors.Is(err, context.Canceled) {
		t.Fatalf("take after a double release: %v, want canceled (one slot)", err)
	}
	var none *slotHold // a sync that creates no sandbox
	none.release()
	if err := none.retake(done); err != nil {
		t.Fatal(err)
	}
}

// TestSlotRetakeFirst: a sync taking its slot back (after a pull or a
// hook) gets the next free one before syncs that have not started, and
// a waiter that gives up leaves the queue.
func TestSlotRetakeFirst(t *testing.T) {
	bg := context.Background()
	slots := newStartSlots(1)
	holder, _ := slots.take(bg)
	back := &slotHold{slots: slots} // released earlier (a pull): it will take the slot back
	gaveUp, cancel := context.WithCancel(bg)
	order := make(chan string, 3)
	var wg sync.WaitGroup
	wg.Go(func() {
		if _, err := slots.take(gaveUp); err == nil {
			order <- "cancelled waiter got a slot"
		}
	})
	wg.Go(func() {
		h, err := slots.take(bg)
		if err == nil {
			order <- "fresh"
			h.release()
		}
	})
	waitQueued(t, slots, 2, 0)
	cancel()
	waitQueued(t, slots, 1, 0)
	wg.Go(func() {
		if back.retake(bg) == nil {
			order <- "back"
			back.release()
		}
	})
	waitQueued(t, slots, 1, 1)
	holder.release()
	wg.Wait()
	close(order)
	var got []string
	for o := range order {
		got = append(got, o)
	}
	if !slices.Equal(got, []string{"back", "fresh"}) {
		t.Fatalf("order %q, want back before fresh", got)
	}
}

// waitQueued waits until slots has fresh and again waiters queued.
func waitQueued(t *testing.T, s *startSlots, fresh, again int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		s.mu.Lock()
		f, a := len(s.fresh), len(s.again)
		s.mu.Unlock()
		if f == fresh && a == again {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("queued fresh %d again %d, want %d and %d", f, a, fresh, again)
		}
		runtime.Gosched()
	}
}

// TestSandboxWaitsForStartSlot: a pod's sandbox is created only with a
// start slot; a sync cancelled while waiting for one creates nothing.
func TestSandboxWaitsForStartSlot(t *testing.T) {
	w := newWorld()
	w.s.slots = newStartSlots(1)
	held, err := w.s.slots.take(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	pod := worldPod(corev1.RestartPolicyAlways, "a")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = w.s.SyncPod(ctx, podworkers.SyncPodSync, pod, nil)
	if err == nil || !strings.Contains(err.Error(), "start slot") {
		t.Fatalf("sync without a free slot: %v", err)
	}
	if n := w.host.sandboxCount(); n != 0 {
		t.Fatalf("%d sandboxes created without a slot", n)
	}
	held.release()
	if _, err := syncOnce(t, w, pod); err != nil {
		t.Fatal(err)
	}
	if n := w.host.sandboxCount(); n != 1 {
		t.Fatalf("%d sandboxes, want 1", n)
	}
}

// TestPostStartGivesUpStartSlot: a pod whose postStart hook runs does not
// hold up the start of another pod (one slot between them).
func TestPostStartGivesUpStartSlot(t *testing.T) {
	w := newWorld()
	w.s.slots = newStartSlots(1)
	started, block := make(chan string, 1), make(chan struct{})
	w.hooks.started, w.hooks.block = started, block
	hooked := hookPod("", "poststart", "a")
	synced := make(chan error, 1)
	go func() { _, err := syncOnce(t, w, hooked); synced <- err }()
	<-started
	syncOther(t, w, "a postStart hook")
	close(block)
	if err := <-synced; err != nil {
		t.Fatal(err)
	}
}

func (h *fakeHost) sandboxCount() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.sandboxes)
}

// TestPullGivesUpStartSlot: a pod whose image is being pulled does not
// hold up the start of another pod (one slot between them).
func TestPullGivesUpStartSlot(t *testing.T) {
	w := newWorld()
	w.s.slots = newStartSlots(1)
	gate := make(chan struct{})
	w.rt.mu.Lock()
	w.rt.pullSize, w.rt.pullGate = 1, gate
	w.rt.mu.Unlock()
	pulling := worldPod(corev1.RestartPolicyAlways, "a")
	synced := make(chan error, 1)
	go func() { _, err := syncOnce(t, w, pulling); synced <- err }()
	<-gate // pulling
	w.rt.mu.Lock()
	w.rt.pullGate = nil // the other pod's pull does not stop
	w.rt.mu.Unlock()
	syncOther(t, w, "a pull")
	gate <- struct{}{}
	if err := <-synced; err != nil {
		t.Fatal(err)
	}
}

// syncOther syncs a second pod, which must not wait for the start slot
// the first holds only around what.
func syncOther(t *testing.T, w *world, what string) {
	t.Helper()
	other := worldPod(corev1.RestartPolicyAlways, "b")
	other.Name, other.UID = "other", types.UID("uid-2")
	done := make(chan error, 1)
	go func() { _, err := syncOnce(t, w, other); done <- err }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the other pod waited for the slot held through %s", what)
	}
}

// TestFailedPostStartKillGivesUpStartSlot: the kill after a failed
// postStart hook (a grace period) does not hold the slot either.
func TestFailedPostStartKillGivesUpStartSlot(t *testing.T) {
	w := newWorld()
	w.s.slots = newStartSlots(1)
	w.hooks.fail["poststart"] = true
	gate, stopping := make(chan struct{}), make(chan struct{})
	w.rt.mu.Lock()
	w.rt.stopGate, w.rt.onStop = gate, func() { close(stopping) }
	w.rt.mu.Unlock()
	hooked := hookPod("", "poststart", "a")
	synced := make(chan error, 1)
	go func() { _, err := syncOnce(t, w, hooked); synced <- err }()
	<-stopping
	syncOther(t, w, "the kill after a failed postStart hook")
	close(gate)
	if err := <-synced; err == nil || !strings.Contains(err.Error(), reasonPostStartHookError) {
		t.Fatalf("sync: %v, want %s", err, reasonPostStartHookError)
	}
}

// TestHostNetworkPodTakesNoStartSlot: a hostNetwork pod (a CNI plugin's
// backend may be one) starts while every slot is held.
func TestHostNetworkPodTakesNoStartSlot(t *testing.T) {
	w := newWorld()
	w.s.slots = newStartSlots(1)
	held, err := w.s.slots.take(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer held.release()
	pod := worldPod(corev1.RestartPolicyAlways, "a")
	pod.Spec.HostNetwork = true
	if _, err := syncOnce(t, w, pod); err != nil {
		t.Fatal(err)
	}
	if n := w.host.sandboxCount(); n != 1 {
		t.Fatalf("%d sandboxes, want 1", n)
	}
}
