package manager

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/desired/podset"
	"github.com/podhost/podhost/internal/kubelet/podworkers"
)

// The API's readers run beside the sync loop. A pod removed and applied
// again (a static pod keeps its UID) moves between the desired set and the
// terminating view, and a podhost.io/after pod waits and is removed, while
// Pods() is read: every read lists web (desired, or Terminating while its
// worker has not finished), whatever the moment, and the race detector
// sees the state's locking (go test -race).
func TestPodsWhileTheLoopRuns(t *testing.T) {
	m, w, _, _, _ := newStartedTestManager()
	w.mu.Lock()
	w.known["u1"] = podworkers.WorkerState{} // not finished: a removed web stays shown
	w.mu.Unlock()
	ctx := context.Background()
	web := hostPortPod("web", "u1", 0)
	m.handleUpdates(ctx, []podset.Update{{Op: podset.ADD, Pod: web}}, nil)

	var stop atomic.Bool
	var wg sync.WaitGroup
	misses := make(chan int, 4)
	for range 4 {
		wg.Go(func() {
			missed := 0
			for !stop.Load() {
				found := false
				for _, e := range m.Pods() {
					found = found || e.Pod.Name == "web"
				}
				if !found {
					missed++
				}
				m.ActivePods()
				m.IsDesired("u1")
			}
			misses <- missed
		})
	}
	waiter := afterPod("cache", "u2", "db")
	for range 200 {
		m.handleUpdates(ctx, []podset.Update{{Op: podset.REMOVE, Pod: web}, {Op: podset.ADD, Pod: waiter}}, nil)
		m.handleUpdates(ctx, []podset.Update{{Op: podset.ADD, Pod: web}, {Op: podset.REMOVE, Pod: waiter}}, nil)
		m.retryDeferredResizes()
		m.WorkerFinished(types.UID("u3"))
	}
	stop.Store(true)
	wg.Wait()
	close(misses)
	for n := range misses {
		if n > 0 {
			t.Errorf("Pods() missed web %d times while it moved between desired and terminating", n)
		}
	}
}
