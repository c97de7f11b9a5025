package daemon

import (
	"context"

	"golang.org/x/sync/errgroup"

	"github.com/podhost/podhost/internal/desired/rolling"
	"github.com/podhost/podhost/internal/desired/source"
)

// runRolling starts the workloads' rolling updates in g between the
// merged sources (in) and the rollout controller (the returned channel):
// a template change reaches the manager pod by pod, as maxSurge,
// maxUnavailable and readiness allow (internal/desired/rolling).
func (d *daemon) runRolling(ctx context.Context, g *errgroup.Group, in <-chan source.Snapshot) <-chan source.Snapshot {
	c := rolling.New(d.statuses, d.log)
	out := make(chan source.Snapshot, 1)
	g.Go(func() error { c.Run(ctx, in, out); return nil })
	return out
}
