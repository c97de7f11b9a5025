package runtime

import (
	"context"
	"fmt"
)

// SnapshotUsage is the disk use of a container's writable layer: its
// active snapshot's Usage in the snapshotter that holds it (overlayfs:
// the upper directory, walked by containerd). The eviction manager counts
// it against the container's ephemeral-storage limit.
func (r *Runtime) SnapshotUsage(ctx context.Context, id string) (bytes, inodes int64, err error) {
	ctx = r.nsctx(ctx)
	c, err := r.client.ContainerService().Get(ctx, id)
	if err != nil {
		return 0, 0, fmt.Errorf("snapshot usage of %s: %w", id, err)
	}
	if c.SnapshotKey == "" {
		return 0, 0, nil
	}
	u, err := r.client.SnapshotService(r.snapshotter(c.Snapshotter)).Usage(ctx, c.SnapshotKey)
	if err != nil {
		return 0, 0, fmt.Errorf("snapshot usage of %s: %w", id, err)
	}
	return u.Size, u.Inodes, nil
}
