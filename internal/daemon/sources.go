package daemon

import (
	"context"

	"golang.org/x/sync/errgroup"

	"github.com/podhost/podhost/internal/config"
	"github.com/podhost/podhost/internal/desired/podsecurity"
	"github.com/podhost/podhost/internal/desired/source"
)

// runSources starts the manifest sources in g: the manifest dir and, when
// configured, the manifest URL, each held to its podSecurity standard,
// merged (the dir first: it wins a name clash) into out.
func (d *daemon) runSources(ctx context.Context, g *errgroup.Group, out chan<- source.Snapshot) error {
	dirSnaps := make(chan source.Snapshot, 1)
	dir := source.New(source.Config{Dir: d.cfg.ManifestDir, Relist: d.cfg.RelistPeriod,
		AllowInsecure: d.cfg.AllowInsecureManifests, LastGood: d.db, Logger: d.log})
	g.Go(func() error { return ignoreCanceled(dir.Run(ctx, dirSnaps)) })
	ins := []<-chan source.Snapshot{filtered(ctx, g, dirSnaps, d.dirPolicy)}
	if u := d.cfg.ManifestURL; u.ManifestURL != "" {
		src, err := source.NewURL(source.URLConfig{URL: u.ManifestURL, AllowHTTP: u.ManifestURLAllowHTTP, Headers: u.ManifestURLHeaders,
			CAFile: u.ManifestURLCAFile, ClientCert: u.ManifestURLClientCert, ClientKey: u.ManifestURLClientKey,
			Period: u.ManifestURLPeriod, LastGood: d.db, Logger: d.log})
		if err != nil {
			return err
		}
		urlSnaps := make(chan source.Snapshot, 1)
		g.Go(func() error { return ignoreCanceled(src.Run(ctx, urlSnaps)) })
		ins = append(ins, filtered(ctx, g, urlSnaps, d.urlPolicy))
	}
	g.Go(func() error { source.Merge(ctx, out, ins...); return nil })
	return nil
}

// sourcePolicies are the manifest dir's and the manifest URL's standards.
func sourcePolicies(ps config.PodSecurity) (dir, url podsecurity.Policy, err error) {
	if dir, err = podsecurity.New("manifestDir", ps.ManifestDir.Level, ps.ManifestDir.AllowedHostPaths); err != nil {
		return dir, url, err
	}
	url, err = podsecurity.New("manifestURL", ps.ManifestURL.Level, ps.ManifestURL.AllowedHostPaths)
	return dir, url, err
}

// filtered passes in's snapshots on without the pods p refuses.
func filtered(ctx context.Context, g *errgroup.Group, in <-chan source.Snapshot, p podsecurity.Policy) <-chan source.Snapshot {
	if p.Permissive() {
		return in
	}
	return relay(ctx, g, in, p.Filter)
}

// relay passes in's snapshots on through f, in a goroutine of g.
func relay(ctx context.Context, g *errgroup.Group, in <-chan source.Snapshot, f func(source.Snapshot) source.Snapshot) <-chan source.Snapshot {
	out := make(chan source.Snapshot, 1)
	g.Go(func() error {
		defer close(out)
		for {
			select {
			case snap, ok := <-in:
				if !ok {
					return nil
				}
				select {
				case out <- f(snap):
				case <-ctx.Done():
					return nil
				}
			case <-ctx.Done():
				return nil
			}
		}
	})
	return out
}
