package daemon

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/podhost/podhost/internal/config"
	"github.com/podhost/podhost/internal/desired/podsecurity"
	"github.com/podhost/podhost/internal/desired/source"
)

// runSources starts the manifest sources in g: the manifest dir and, when
// configured, the manifest URL (or artifact), each held to its podSecurity standard,
// merged (the dir first: it wins a name clash) into out.
func (d *daemon) runSources(ctx context.Context, g *errgroup.Group, out chan<- source.Snapshot) error {
	dirSnaps := make(chan source.Snapshot, 1)
	dir := source.New(source.Config{Dir: d.cfg.ManifestDir, Relist: d.cfg.RelistPeriod,
		AllowInsecure: d.cfg.AllowInsecureManifests, LastGood: d.db, Logger: d.log})
	g.Go(func() error { return ignoreCanceled(dir.Run(ctx, dirSnaps)) })
	ins := []<-chan source.Snapshot{filtered(ctx, g, dirSnaps, d.dirPolicy)}
	if u := d.cfg.ManifestURL; u.ManifestURL != "" {
		src, err := d.urlSource(u)
		if err != nil {
			return err
		}
		urlSnaps := make(chan source.Snapshot, 1)
		g.Go(func() error { return ignoreCanceled(src.Run(ctx, urlSnaps)) })
		ins = append(ins, filtered(ctx, g, urlSnaps, d.urlPolicy))
	}
	if d.cfg.Cluster.Joined() {
		snaps, err := d.runClusterSource(ctx, g)
		if err != nil {
			return err
		}
		ins = append(ins, snaps)
	}
	g.Go(func() error { source.Merge(ctx, out, ins...); return nil })
	return nil
}

// urlSource is the manifestURL's source: a manifest artifact
// (oci://, fetched through the runtime's registry settings and verified
// under the image policy) or a URL.
func (d *daemon) urlSource(u config.ManifestURL) (interface {
	Run(context.Context, chan<- source.Snapshot) error
}, error) {
	if strings.HasPrefix(u.ManifestURL, source.OCIScheme) {
		cfg := source.OCIConfig{Ref: u.ManifestURL, Registry: d.rt, Period: u.ManifestURLPeriod, LastGood: d.db, Logger: d.log}
		if d.images != nil {
			cfg.Verifier = d.images
		}
		return source.NewOCI(cfg)
	}
	return source.NewURL(source.URLConfig{URL: u.ManifestURL, AllowHTTP: u.ManifestURLAllowHTTP, Headers: u.ManifestURLHeaders,
		CAFile: u.ManifestURLCAFile, ClientCert: u.ManifestURLClientCert, ClientKey: u.ManifestURLClientKey,
		Period: u.ManifestURLPeriod, LastGood: d.db, Logger: d.log})
}

// runClusterSource reads the pods the cluster binds to this node from the
// dir podhost-cluster writes them to (made here, root only): a manifest
// dir of its own, last in the merge (a static pod of the same name wins),
// held to podSecurity.cluster. The daemon reads files only: it never
// waits for podhost-cluster or the API server, and the files keep the
// pods running across restarts while both are away.
func (d *daemon) runClusterSource(ctx context.Context, g *errgroup.Group) (<-chan source.Snapshot, error) {
	dir := d.cfg.ClusterManifestDir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("cluster source: %w", err)
	}
	src := source.New(source.Config{Dir: dir, Relist: d.cfg.RelistPeriod, LastGood: d.db, Logger: d.log})
	snaps := make(chan source.Snapshot, 1)
	g.Go(func() error { return ignoreCanceled(src.Run(ctx, snaps)) })
	return filtered(ctx, g, snaps, d.clusterPolicy), nil
}

// The trust scopes of the sources' ConfigMaps and Secrets (sourceScope).
const (
	scopeLocal   = "manifestDir"
	scopeURL     = "manifestURL"
	scopeCluster = "cluster"
)

// sourceScope is configdata.ScopeFunc: which source's ConfigMaps and
// Secrets a pod of src (its config-source: a file, a URL) may read — its
// own source's only. The manifest dir (with what `podhost apply` and the
// local kube API write there) is root's; the manifest URL (or artifact)
// and the cluster's API server (the cluster dir) are less trusted: their
// pods must not read root's Secrets, and root's pods do not read theirs
// (a URL or the cluster must not fill in a name a local pod references,
// e.g. an optional Secret the dir does not declare). Anything that is not
// a file of the dir or of the cluster dir is the URL's.
func (d *daemon) sourceScope(src string) string {
	switch {
	case src == "":
		return ""
	case filepath.Dir(src) == d.cfg.ClusterManifestDir():
		return scopeCluster
	case filepath.Dir(src) == filepath.Clean(d.cfg.ManifestDir):
		return scopeLocal
	}
	return scopeURL
}

// sourcePolicies are the manifest dir's, the manifest URL's and the
// cluster source's standards.
func sourcePolicies(ps config.PodSecurity) (dir, url, cluster podsecurity.Policy, err error) {
	if dir, err = podsecurity.New("manifestDir", ps.ManifestDir.Level, ps.ManifestDir.AllowedHostPaths); err != nil {
		return dir, url, cluster, err
	}
	if url, err = podsecurity.New("manifestURL", ps.ManifestURL.Level, ps.ManifestURL.AllowedHostPaths); err != nil {
		return dir, url, cluster, err
	}
	cluster, err = podsecurity.New("cluster", ps.Cluster.Level, ps.Cluster.AllowedHostPaths)
	return dir, url, cluster, err
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
