package runtime

import (
	"context"
	"sync"
)

// groupLocks serialises the task creates of one shim group. containerd
// starts a group's shim from a create that finds none: two creates of a
// group with no shim each run `containerd-shim-runc-v2 start`, and when the
// second finds the first's socket bound but not yet listening, it removes
// it and starts a second shim under the same name. A task created in the
// first shim then lives where the group's socket no longer leads: after a
// containerd restart containerd reaches the other shim, does not find the
// task there and cleans it up as leaked — the container dies (the VM suite
// saw it: two creates 6 ms apart started one group). The shim serialises
// its creates anyway (its mutex spans runc create), so waiting here costs
// little parallelism.
type groupLocks struct {
	mu    sync.Mutex
	locks map[string]*groupLock
}

type groupLock struct {
	sem  chan struct{}
	refs int
}

// lock waits for group's turn; unlock must be called once it returns nil.
// "" is no group: no wait.
func (g *groupLocks) lock(ctx context.Context, group string) (unlock func(), err error) {
	if group == "" {
		return func() {}, nil
	}
	g.mu.Lock()
	if g.locks == nil {
		g.locks = map[string]*groupLock{}
	}
	l := g.locks[group]
	if l == nil {
		l = &groupLock{sem: make(chan struct{}, 1)}
		g.locks[group] = l
	}
	l.refs++
	g.mu.Unlock()
	release := func() {
		g.mu.Lock()
		if l.refs--; l.refs == 0 {
			delete(g.locks, group)
		}
		g.mu.Unlock()
	}
	select {
	case l.sem <- struct{}{}:
		return func() { <-l.sem; release() }, nil
	case <-ctx.Done():
		release()
		return nil, ctx.Err()
	}
}
