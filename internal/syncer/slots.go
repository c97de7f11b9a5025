package syncer

import (
	"context"
	"runtime"
)

// startSlots bounds how many pods create their sandbox and start their
// containers at once. Without a bound a cold start of 250 pods ran 250
// sandbox creations (netns, CNI ADD with its plugins' locks and iptables)
// and 250 task creates side by side: in the dev env (2 cores) all were
// Running after 28–29 s, and the daemon kept 29 MiB of anonymous memory,
// the in-flight work of 250 syncs left scattered over the heap. With 16
// slots the same start took 21–22 s and left 22–24 MiB (decisions.md 16).
// A sync holds its slot from its sandbox's creation to its end, and gives
// it up while it waits on an image pull or a postStart hook, which take
// no slot's share of the machine and may take minutes.
type startSlots chan struct{}

// defaultStartSlots is 8 per CPU: enough to keep every CPU busy with the
// runc, shim, CNI and containerd work a start mostly is.
func defaultStartSlots() int { return 8 * runtime.NumCPU() }

func newStartSlots(n int) startSlots {
	if n <= 0 {
		n = defaultStartSlots()
	}
	return make(startSlots, n)
}

// take waits for a slot; the hold releases it.
func (s startSlots) take(ctx context.Context) (*slotHold, error) {
	h := &slotHold{slots: s}
	if err := h.retake(ctx); err != nil {
		return nil, err
	}
	return h, nil
}

// slotHold is one sync's claim on a start slot. A nil hold (a sync that
// creates no sandbox) does nothing.
type slotHold struct {
	slots startSlots
	held  bool
}

// release gives the slot up, if held.
func (h *slotHold) release() {
	if h == nil || !h.held {
		return
	}
	h.held = false
	<-h.slots
}

// retake waits for a slot again after a release.
func (h *slotHold) retake(ctx context.Context) error {
	if h == nil || h.held {
		return nil
	}
	select {
	case h.slots <- struct{}{}:
		h.held = true
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// around runs fn with the slot given up for its duration, then takes it
// back (fn's error first).
func (h *slotHold) around(ctx context.Context, fn func() error) error {
	h.release()
	err := fn()
	if rerr := h.retake(ctx); err == nil {
		err = rerr
	}
	return err
}
