package daemon

import (
	"context"
	"errors"
	"fmt"

	"golang.org/x/sync/errgroup"

	"github.com/podhost/podhost/internal/desired/rollout"
	"github.com/podhost/podhost/internal/desired/source"
	"github.com/podhost/podhost/internal/services/api"
)

// runRollout starts the rollout controller in g between the merged sources
// (in) and the manager (the returned channel): it records each pod's
// versions and swaps a version that is not Ready within its rollback window
// for the previous one (internal/desired/rollout).
func (d *daemon) runRollout(ctx context.Context, g *errgroup.Group, in <-chan source.Snapshot) <-chan source.Snapshot {
	d.rollout = rollout.New(d.statuses, d.db, rollout.Options{DefaultWindow: d.cfg.RollbackAfter,
		Metrics: d.metrics.NewRollbacks(), Logger: d.log})
	out := make(chan source.Snapshot, 1)
	g.Go(func() error { d.rollout.Run(ctx, in, out); return nil })
	return out
}

// rolloutBackend serves `podhost rollout history|undo`.
type rolloutBackend struct{ c *rollout.Controller }

func (b rolloutBackend) History(namespace, name string) ([]api.RolloutRevision, error) {
	h, err := b.c.History(namespace, name)
	if err != nil {
		return nil, apiError(err)
	}
	out := make([]api.RolloutRevision, 0, len(h))
	for _, e := range h {
		out = append(out, api.RolloutRevision{Revision: e.Revision, UID: e.UID, Hash: e.Hash, Source: e.Source,
			Time: e.Time, Outcome: e.Outcome, Reason: e.Reason, Running: e.Running})
	}
	return out, nil
}

func (b rolloutBackend) Undo(namespace, name string) (int, error) {
	n, err := b.c.Undo(namespace, name)
	return n, apiError(err)
}

func apiError(err error) error {
	if errors.Is(err, rollout.ErrNotFound) {
		return fmt.Errorf("%w: %s", api.ErrNotFound, err.Error())
	}
	return err
}
