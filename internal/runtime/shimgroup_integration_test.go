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

	"github.com/podhost/podhost/internal/runtime"
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
