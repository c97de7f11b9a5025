package syncer

import (
	"context"
	"sync"
	"time"
)

// stopSlack bounds a stop beyond its grace period: the SIGKILL and the wait
// for the task's exit.
const stopSlack = 30 * time.Second

// stopper runs each container stop once. A stop outlives the sync that
// asked for it (a kill request cancels that sync: the stop signal was sent
// and the grace period runs, so the stop goes on to its end), and a later
// stop of the same container — the termination that cancelled the sync —
// joins it instead of signalling again. A container stopped successfully
// is not stopped again — a plan made from an observation taken before the
// stop ended would otherwise repeat it — until forget (the container was
// removed; IDs are never reused). Every stop ends at close.
type stopper struct {
	base   context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	inflight map[string]*stopOp
	stopped  map[string]bool
}

type stopOp struct {
	done chan struct{}
	err  error
}

func newStopper() *stopper {
	ctx, cancel := context.WithCancel(context.Background())
	return &stopper{base: ctx, cancel: cancel, inflight: map[string]*stopOp{}, stopped: map[string]bool{}}
}

// stop runs fn for container id unless a stop of id is in flight, then
// waits for whichever runs (or for ctx).
func (s *stopper) stop(ctx context.Context, id string, grace time.Duration, fn func(context.Context) error) error {
	s.mu.Lock()
	if s.stopped[id] {
		s.mu.Unlock()
		return nil
	}
	op := s.inflight[id]
	if op == nil {
		op = &stopOp{done: make(chan struct{})}
		s.inflight[id] = op
		s.wg.Add(1)
		go s.run(id, op, grace, fn)
	}
	s.mu.Unlock()
	select {
	case <-op.done:
		return op.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *stopper) run(id string, op *stopOp, grace time.Duration, fn func(context.Context) error) {
	defer s.wg.Done()
	ctx, cancel := context.WithTimeout(s.base, grace+stopSlack)
	defer cancel()
	op.err = fn(ctx)
	s.mu.Lock()
	delete(s.inflight, id)
	if op.err == nil {
		s.stopped[id] = true
	}
	s.mu.Unlock()
	close(op.done)
}

// forget drops what is known of container id (it was removed).
func (s *stopper) forget(id string) {
	s.mu.Lock()
	delete(s.stopped, id)
	s.mu.Unlock()
}

func (s *stopper) close() {
	s.cancel()
	s.wg.Wait()
}
