package runtime

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Creates of one group run one at a time; other groups are not held; a
// cancelled wait returns; the table forgets groups nobody holds.
func TestGroupLocks(t *testing.T) {
	var g groupLocks
	ctx := context.Background()
	var inA, maxA atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			unlock, err := g.lock(ctx, "a")
			if err != nil {
				t.Error(err)
				return
			}
			n := inA.Add(1)
			for m := maxA.Load(); n > m && !maxA.CompareAndSwap(m, n); m = maxA.Load() {
			}
			time.Sleep(time.Millisecond)
			inA.Add(-1)
			unlock()
		}()
	}
	wg.Wait()
	if maxA.Load() != 1 {
		t.Fatalf("%d creates of one group at once, want 1", maxA.Load())
	}

	unlockA, _ := g.lock(ctx, "a")
	unlockB, err := g.lock(ctx, "b") // another group: not held by a
	if err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	if _, err := g.lock(cctx, "a"); err == nil {
		t.Fatal("second lock of a held group returned before its context ended")
	}
	unlockNone, _ := g.lock(ctx, "")
	unlockNone()
	unlockA()
	unlockB()
	if len(g.locks) != 0 {
		t.Fatalf("%d groups left in the table, want 0", len(g.locks))
	}
}
