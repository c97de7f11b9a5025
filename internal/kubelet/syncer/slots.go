package syncer

import (
	"context"
	"runtime"
	"sync"
)

// startSlots bounds how many syncs create a pod's sandbox and start its
// containers at once (docs/decisions.md 16). Without a bound a cold start
// of 250 pods ran 250 sandbox creations (netns, CNI ADD with its plugins'
// locks and iptables) and 250 task creates side by side: in the dev env
// (2 cores) all were Running after 28–29 s, and the daemon kept 29 MiB of
// anonymous memory, the in-flight work of 250 syncs left scattered over
// the heap. With 16 slots the same start took 21–24 s and left 22–24 MiB;
// `make bench` with 32 (the default on 2 cores): 20.4 s against the
// floor's 22.4, and 23.0 MiB.
//
// A sync that creates a sandbox (not a hostNetwork pod's: a CNI plugin's
// backend may be such a pod, and others' CNI ADDs may wait for it) takes a
// slot before it and holds it until it has started the containers due,
// but gives it up while it waits on an image pull or a postStart hook (and
// the kill after a failed one), which may take minutes. Taking it back
// goes before syncs that have not started, so a pod that pulled is not
// queued behind every sandbox of a cold start. Later syncs (the next init
// container, restarts) take none.
type startSlots struct {
	mu    sync.Mutex
	free  int
	fresh []chan struct{} // syncs waiting to create a sandbox
	again []chan struct{} // syncs taking theirs back: served first
}

// defaultStartSlots is 16 per CPU podhost may use: enough to keep them
// busy with the runc, shim, CNI and containerd work a start mostly is. A
// shim creates one task at a time, so the syncs of one shim group's 8
// pods (decision 15) start their tasks in a row: with 8 slots per CPU a
// 30-pod start on 2 cores had 2 groups at work instead of 4 and took
// 2.1–2.3 s instead of 1.7–2.2.
func defaultStartSlots() int { return 16 * runtime.GOMAXPROCS(0) }

func newStartSlots(n int) *startSlots { return &startSlots{free: n} }

// take waits for a slot for a sync about to create a sandbox; the hold
// releases it.
func (s *startSlots) take(ctx context.Context) (*slotHold, error) {
	if err := s.acquire(ctx, false); err != nil {
		return nil, err
	}
	return &slotHold{slots: s, held: true}, nil
}

func (s *startSlots) acquire(ctx context.Context, again bool) error {
	s.mu.Lock()
	if s.free > 0 {
		s.free--
		s.mu.Unlock()
		return nil
	}
	ch := make(chan struct{})
	if again {
		s.again = append(s.again, ch)
	} else {
		s.fresh = append(s.fresh, ch)
	}
	s.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
	}
	s.mu.Lock()
	queued := s.dequeue(ch)
	s.mu.Unlock()
	if !queued { // handed a slot meanwhile: pass it on
		s.release()
	}
	return ctx.Err()
}

// dequeue removes ch from the queues and reports whether it was there.
func (s *startSlots) dequeue(ch chan struct{}) bool {
	for _, q := range []*[]chan struct{}{&s.again, &s.fresh} {
		for i, c := range *q {
			if c == ch {
				*q = append((*q)[:i], (*q)[i+1:]...)
				return true
			}
		}
	}
	return false
}

// release hands the slot to the first waiter taking one back, else to
// the first new one, else frees it.
func (s *startSlots) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, q := range []*[]chan struct{}{&s.again, &s.fresh} {
		if len(*q) > 0 {
			close((*q)[0])
			*q = (*q)[1:]
			return
		}
	}
	s.free++
}

// slotHold is one sync's claim on a start slot (used by that sync's
// goroutine only). A nil hold (a sync that creates no sandbox) does
// nothing.
type slotHold struct {
	slots *startSlots
	held  bool
}

// release gives the slot up, if held.
func (h *slotHold) release() {
	if h == nil || !h.held {
		return
	}
	h.held = false
	h.slots.release()
}

// retake waits for the slot again after a release.
func (h *slotHold) retake(ctx context.Context) error {
	if h == nil || h.held {
		return nil
	}
	if err := h.slots.acquire(ctx, true); err != nil {
		return err
	}
	h.held = true
	return nil
}
