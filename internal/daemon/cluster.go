package daemon

import (
	"context"
	"fmt"
	"os"

	"golang.org/x/sync/errgroup"
	"k8s.io/client-go/kubernetes"

	"github.com/podhost/podhost/internal/config"
	"github.com/podhost/podhost/internal/kubelet/admission"
	"github.com/podhost/podhost/internal/services/cluster"
	"github.com/podhost/podhost/internal/version"
)

// nodeNameOf is the name of the Node podhost stands for: cluster.nodeName,
// else the host name as the kubelet makes it one.
func nodeNameOf(cfg *config.Config) string {
	if cfg.Cluster.NodeName != "" {
		return cfg.Cluster.NodeName
	}
	host, _ := os.Hostname()
	return admission.NodeName(host)
}

// clusterClient reads the cluster kubeconfig before anything starts (a
// file that cannot be read or parsed stops the daemon with one line); nil
// when no cluster is configured.
func clusterClient(kubeconfig string) (kubernetes.Interface, error) {
	if kubeconfig == "" {
		return nil, nil
	}
	cfg, err := cluster.ClientConfig(kubeconfig, "podhost/"+version.Version)
	if err != nil {
		return nil, err
	}
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("cluster.kubeconfig %s: %w", kubeconfig, err)
	}
	return c, nil
}

// clusterBackend is the node as the cluster agent sees it.
type clusterBackend struct{ *backend }

// Changed is closed at the next change of a pod's status or desired
// version.
func (b clusterBackend) Changed(ctx context.Context) <-chan struct{} {
	st, pods := b.st.Changed(), b.mgr.Changed()
	out := make(chan struct{})
	go func() {
		select {
		case <-st:
		case <-pods:
		case <-ctx.Done():
		}
		close(out)
	}()
	return out
}

// startCluster runs the cluster agent when a cluster is configured:
// standalone, nothing of it is built.
func (d *daemon) startCluster(ctx context.Context, g *errgroup.Group, b *backend) {
	if d.cluster == nil {
		return
	}
	a := cluster.New(d.cluster, clusterBackend{b}, cluster.Options{NodeName: d.nodeName, Logger: d.log})
	g.Go(func() error { a.Run(ctx); return nil })
}
