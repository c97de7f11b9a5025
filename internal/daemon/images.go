package daemon

import (
	"context"

	"golang.org/x/sync/errgroup"

	"github.com/podhost/podhost/internal/host/imagesdir"
)

// runImagesDir starts the images directory's loader in g and returns it
// and the channel that tells the manager images arrived. The manager's
// loop waits for the loader's first pass (Ready): no pod is synced before
// the archives there are imported. A directory that cannot be watched is
// logged, not fatal: pods whose images are present still run.
func (d *daemon) runImagesDir(ctx context.Context, g *errgroup.Group) (*imagesdir.Loader, <-chan struct{}) {
	added := make(chan struct{}, 1)
	l := imagesdir.New(d.rt, imagesdir.Config{Dir: d.cfg.ImagesDirPath(), AllowInsecure: d.cfg.AllowInsecureManifests, Logger: d.log,
		Imported: func([]string) {
			d.syncer.ImagesAdded()
			select {
			case added <- struct{}{}:
			default:
			}
		}})
	g.Go(func() error {
		if err := l.Run(ctx); err != nil && ctx.Err() == nil {
			d.log.Error("images dir not watched", "dir", d.cfg.ImagesDirPath(), "err", err)
		}
		return nil
	})
	return l, added
}
