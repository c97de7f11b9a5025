package daemon

import (
	"context"

	"golang.org/x/sync/errgroup"

	"github.com/podhost/podhost/internal/desired/source"
)

// runSources starts the manifest sources in g: the manifest dir and, when
// configured, the manifest URL, merged (the dir first: it wins a name
// clash) into out.
func (d *daemon) runSources(ctx context.Context, g *errgroup.Group, out chan<- source.Snapshot) error {
	dirSnaps := make(chan source.Snapshot, 1)
	dir := source.New(source.Config{Dir: d.cfg.ManifestDir, Relist: d.cfg.RelistPeriod,
		AllowInsecure: d.cfg.AllowInsecureManifests, LastGood: d.db, Logger: d.log})
	g.Go(func() error { return ignoreCanceled(dir.Run(ctx, dirSnaps)) })
	ins := []<-chan source.Snapshot{dirSnaps}
	if u := d.cfg.ManifestURL; u.ManifestURL != "" {
		src, err := source.NewURL(source.URLConfig{URL: u.ManifestURL, AllowHTTP: u.ManifestURLAllowHTTP, Headers: u.ManifestURLHeaders,
			CAFile: u.ManifestURLCAFile, ClientCert: u.ManifestURLClientCert, ClientKey: u.ManifestURLClientKey,
			Period: u.ManifestURLPeriod, LastGood: d.db, Logger: d.log})
		if err != nil {
			return err
		}
		urlSnaps := make(chan source.Snapshot, 1)
		g.Go(func() error { return ignoreCanceled(src.Run(ctx, urlSnaps)) })
		ins = append(ins, urlSnaps)
	}
	g.Go(func() error { source.Merge(ctx, out, ins...); return nil })
	return nil
}
