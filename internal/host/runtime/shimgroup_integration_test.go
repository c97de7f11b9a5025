//go:build integration

package runtime_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/pkg/oci"

	"github.com/podhost/podhost/internal/host/runtime"
	"github.com/podhost/podhost/internal/testenv"
)

// A pod joining a shared shim group while the group's last container is
// removed (its shim shutting down) still starts. Each round races the
// removal of the group's only container against the start of a new one in
// the same group, with a varied head start for the removal.
func TestSharedShimGroupChurn(t *testing.T) {
	rt := connect(t)
	ctx := context.Background()
	img := importImage(t, ctx, rt)
	group := oci.WithAnnotations(map[string]string{runtime.ShimGroupAnnotation: fmt.Sprintf("churn-%d", os.Getpid())})
	args := []string{"sleep", "100"}
	prev, _, _ := newContainer(t, ctx, rt, img, args, group)
	if err := rt.StartContainer(ctx, prev); err != nil {
		t.Fatal(err)
	}
	for round := 0; round < 30; round++ {
		next, _, _ := newContainer(t, ctx, rt, img, args, group)
		if err := rt.StopContainer(ctx, prev, 0); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var rmErr error
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Duration(round%10) * 5 * time.Millisecond) // vary the overlap
			rmErr = rt.RemoveContainer(ctx, prev)
		}()
		startErr := rt.StartContainer(ctx, next)
		wg.Wait()
		if rmErr != nil {
			t.Fatalf("round %d: remove %s: %v", round, prev, rmErr)
		}
		if startErr != nil {
			t.Fatalf("round %d: start %s while its group's shim shut down: %v", round, next, startErr)
		}
		prev = next
	}
}

// Containers of a new group started at the same moment all land in one
// shim: creates of a group are serialised, so two `shim start`s never race
// for the group's socket (the loser's shim would hold a task containerd
// cannot reach after a restart).
func TestSharedShimGroupStartsOneShim(t *testing.T) {
	rt := connect(t)
	ctx := context.Background()
	img := importImage(t, ctx, rt)
	for round := 0; round < 10; round++ {
		group := oci.WithAnnotations(map[string]string{runtime.ShimGroupAnnotation: fmt.Sprintf("one-%d-%d", os.Getpid(), round)})
		type made struct{ id, uid string }
		var cs []made
		for i := 0; i < 3; i++ {
			id, uid, _ := newContainer(t, ctx, rt, img, []string{"sleep", "100"}, group)
			cs = append(cs, made{id, uid})
		}
		var wg sync.WaitGroup
		errs := make([]error, len(cs))
		for i, c := range cs {
			wg.Add(1)
			go func() { defer wg.Done(); errs[i] = rt.StartContainer(ctx, c.id) }()
		}
		wg.Wait()
		shims := map[int]bool{}
		for i, c := range cs {
			if errs[i] != nil {
				t.Fatalf("round %d: start %s: %v", round, c.id, errs[i])
			}
			_, pc := findContainer(t, ctx, rt, c.uid, c.id)
			shims[testenv.ParentPID(int(pc.PID))] = true
		}
		if len(shims) != 1 {
			t.Fatalf("round %d: the group's containers are in %d shims %v, want 1", round, len(shims), shims)
		}
		for _, c := range cs {
			if err := rt.StopContainer(ctx, c.id, 0); err != nil {
				t.Fatal(err)
			}
			if err := rt.RemoveContainer(ctx, c.id); err != nil {
				t.Fatal(err)
			}
		}
	}
}
