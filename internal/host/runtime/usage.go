package runtime

import (
	"context"
	"fmt"

	"github.com/containerd/errdefs"
)

// SnapshotUsage is the disk use of a container's writable layer: its
// active snapshot's Usage in the snapshotter that holds it (overlayfs:
// the upper directory, walked by containerd). The eviction manager counts
// it against the container's ephemeral-storage limit. podhost creates a
// container's snapshot under its ID in the runtime's snapshotter, so one
// call answers; a container made otherwise is looked up first.
func (r *Runtime) SnapshotUsage(ctx context.Context, id string) (bytes, inodes int64, err error) {
	ctx = r.nsctx(ctx)
	u, err := r.client.SnapshotService(r.snapshotter("")).Usage(ctx, id)
	if errdefs.IsNotFound(err) {
		c, gerr := r.client.ContainerService().Get(ctx, id)
		if gerr != nil {
			return 0, 0, fmt.Errorf("snapshot usage of %s: %w", id, gerr)
		}
		if c.SnapshotKey == "" {
			return 0, 0, nil
		}
		u, err = r.client.SnapshotService(r.snapshotter(c.Snapshotter)).Usage(ctx, c.SnapshotKey)
	}
	if err != nil {
		return 0, 0, fmt.Errorf("snapshot usage of %s: %w", id, err)
	}
	return u.Size, u.Inodes, nil
}
