//go:build integration

package runtime_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/core/leases"
	"github.com/containerd/containerd/v2/core/snapshots"
	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/containerd/errdefs"

	"github.com/podhost/podhost/internal/model/podstate"
	"github.com/podhost/podhost/internal/model/wellknown"
)

// podhostLeases lists the leases labelled wellknown.LabelLease.
func podhostLeases(t *testing.T, ctx context.Context) []leases.Lease {
	t.Helper()
	ls, err := env.Client().LeasesService().List(env.Context(ctx), fmt.Sprintf("labels.%q==true", wellknown.LabelLease))
	if err != nil {
		t.Fatal(err)
	}
	return ls
}

func snapshotExists(t *testing.T, ctx context.Context, key string) bool {
	t.Helper()
	_, err := env.Client().SnapshotService(env.Snapshotter).Stat(env.Context(ctx), key)
	if err != nil && !errdefs.IsNotFound(err) {
		t.Fatal(err)
	}
	return err == nil
}

// TestCreateLeavesNoLease: a container create releases its lease at once; the
// snapshot is the container's (labelled) and goes with it.
func TestCreateLeavesNoLease(t *testing.T) {
	rt := connect(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	img := importImage(t, ctx, rt)
	id, _, _ := newContainer(t, ctx, rt, img, []string{"sleep", "60"})
	if ls := podhostLeases(t, ctx); len(ls) != 0 {
		t.Fatalf("leases left after create: %+v", ls)
	}
	info, err := env.Client().SnapshotService(env.Snapshotter).Stat(env.Context(ctx), id)
	if err != nil || info.Labels[wellknown.LabelSnapshotContainer] != id {
		t.Fatalf("snapshot %s: %+v, %v", id, info, err)
	}
	if err := rt.CollectGarbage(ctx); err != nil {
		t.Fatal(err)
	}
	if !snapshotExists(t, ctx, id) {
		t.Fatal("CollectGarbage removed a container's snapshot")
	}
	removeAndCheck(t, ctx, rt, id)
	if snapshotExists(t, ctx, id) {
		t.Fatal("snapshot left after RemoveContainer")
	}
}

// TestCollectGarbageCutCreate: what a podhost killed inside a create leaves
// (its lease, owner gone, holding a prepared rootfs snapshot, no container)
// is removed by CollectGarbage.
func TestCollectGarbageCutCreate(t *testing.T) {
	rt := connect(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	img := importImage(t, ctx, rt)
	cimg, err := env.Client().GetImage(env.Context(ctx), img.Ref)
	if err != nil {
		t.Fatal(err)
	}
	ls := env.Client().LeasesService()
	l, err := ls.Create(env.Context(ctx), leases.WithID("cut-"+t.Name()), leases.WithExpiration(time.Hour),
		leases.WithLabels(map[string]string{wellknown.LabelLease: "true", wellknown.LabelLeaseOwner: "1-1"}))
	if err != nil {
		t.Fatal(err)
	}
	key := "cut-create-snapshot"
	lctx := leases.WithLease(env.Context(ctx), l.ID)
	// What WithNewSnapshot does before the container record exists.
	err = client.WithNewSnapshot(key, cimg, snapshots.WithLabels(map[string]string{wellknown.LabelSnapshotContainer: key}))(lctx, env.Client(), &containers.Container{Snapshotter: env.Snapshotter})
	if err != nil {
		t.Fatal(err)
	}
	if !snapshotExists(t, ctx, key) {
		t.Fatal("no snapshot prepared")
	}
	live, _, _ := newContainer(t, ctx, rt, img, []string{"true"}) // its snapshot stays
	if err := rt.CollectGarbage(ctx); err != nil {
		t.Fatal(err)
	}
	if left := podhostLeases(t, ctx); len(left) != 0 {
		t.Fatalf("leases left: %+v", left)
	}
	if snapshotExists(t, ctx, key) {
		t.Fatal("snapshot of the cut create left")
	}
	if !snapshotExists(t, ctx, live) {
		t.Fatal("the snapshot of a live container was removed")
	}
}

// TestTaskLeftCreated: podhost killed between NewTask and Start leaves a
// task in state created. ListPods reports it Created, StartContainer
// refuses it (AlreadyExists: the syncer removes the container and starts a
// new one), and RemoveContainer removes such a container promptly.
func TestTaskLeftCreated(t *testing.T) {
	rt := connect(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	img := importImage(t, ctx, rt)
	for _, remove := range []bool{false, true} {
		id, uid, _ := newContainer(t, ctx, rt, img, []string{"sleep", "60"})
		c, err := env.Client().LoadContainer(env.Context(ctx), id)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.NewTask(env.Context(ctx), cio.NullIO); err != nil {
			t.Fatal(err)
		}
		if _, pc := findContainer(t, ctx, rt, uid, id); pc.State != podstate.StateCreated {
			t.Fatalf("state %s, want created", pc.State)
		}
		if remove {
			start := time.Now()
			removeAndCheck(t, ctx, rt, id)
			t.Logf("removed in %v", time.Since(start))
			continue
		}
		// The syncer removes such a container and starts a new one:
		// StartContainer does not replace the task.
		if err := rt.StartContainer(ctx, id); !errdefs.IsAlreadyExists(err) {
			t.Fatalf("start with a created task there: %v", err)
		}
		if _, pc := findContainer(t, ctx, rt, uid, id); pc.State != podstate.StateCreated {
			t.Fatalf("after the refused start: %+v", pc)
		}
		removeAndCheck(t, ctx, rt, id)
	}
}
