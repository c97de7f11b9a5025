// Package localnode is the node as the podhost daemon shows it on its unix
// socket: the Kubernetes API the daemon serves there (/api/v1: the Node,
// pods with status, watched) and its /readyz. It is the Backend of the
// cluster agent (internal/services/cluster) in podhost-cluster, a process
// of its own beside the daemon so that the daemon never links client-go's
// clientset (docs/decisions.md 29). Nothing here writes to the daemon.
package localnode

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/podhost/podhost/internal/services/api"
)

// callTimeout bounds each request to the daemon: a daemon that hangs is
// one that does not answer.
const callTimeout = 10 * time.Second

// RESTConfig is a client config for the daemon's Kubernetes API on its
// unix socket (root only: no credentials).
func RESTConfig(socket, userAgent string) *rest.Config {
	return &rest.Config{Host: "http://localhost", UserAgent: userAgent, Timeout: callTimeout,
		Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		}}
}

// Transport reaches the daemon's socket with no time limit of its own
// (the kubelet API proxies streams through it to http://localhost).
func Transport(socket string) *http.Transport {
	return &http.Transport{MaxIdleConns: 4, IdleConnTimeout: time.Minute,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		}}
}

// NodeName is the name of the Node the daemon serves (its only one).
func NodeName(ctx context.Context, client kubernetes.Interface) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	l, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", fmt.Errorf("the daemon's node: %w", err)
	}
	if len(l.Items) != 1 {
		return "", fmt.Errorf("the daemon's node: it serves %d nodes, want 1", len(l.Items))
	}
	return l.Items[0].Name, nil
}

// Node is the daemon's node.
type Node struct {
	client kubernetes.Interface
	api    *api.Client // podhost's /v1 on the same socket
	name   string

	mu      sync.Mutex
	changed chan struct{} // closed and replaced at every change of a pod
}

// New reads the node name through client, a client of the daemon's
// socket (RESTConfig).
func New(client kubernetes.Interface, socket, name string) *Node {
	return &Node{client: client, api: api.NewClient(socket), name: name, changed: make(chan struct{})}
}

// Refusals are the manifest files the daemon refused (GET /v1/errors),
// by path.
func (n *Node) Refusals(ctx context.Context) (map[string]string, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	errs, err := n.api.FileErrors(ctx)
	if err != nil {
		return nil, fmt.Errorf("the daemon's refused files: %w", err)
	}
	out := make(map[string]string, len(errs))
	for _, e := range errs {
		out[e.File] = e.Error
	}
	return out, nil
}

// SetDeletionGrace gives the daemon's pod its deletion grace period
// (POST /v1/pods/{namespace}/{name}/grace); a pod the daemon does not run,
// or already stops, needs none.
func (n *Node) SetDeletionGrace(ctx context.Context, namespace, name string, seconds int64) error {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	if err := n.api.SetDeletionGrace(ctx, namespace, name, seconds); err != nil && !errors.Is(err, api.ErrNotFound) {
		return err
	}
	return nil
}

// Run watches the daemon's pods until ctx ends, so that Changed fires at
// each change; the watch is re-established whenever the daemon returns.
func (n *Node) Run(ctx context.Context) error {
	lw := cache.NewListWatchFromClient(n.client.CoreV1().RESTClient(), "pods", metav1.NamespaceAll, fields.Everything())
	inf := cache.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, cache.Indexers{})
	notify := func(any) { n.notify() }
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: notify,
		UpdateFunc: func(_, p any) { notify(p) }, DeleteFunc: notify}); err != nil {
		return fmt.Errorf("watch the daemon's pods: %w", err)
	}
	inf.RunWithContext(ctx)
	return nil
}

func (n *Node) notify() {
	n.mu.Lock()
	defer n.mu.Unlock()
	close(n.changed)
	n.changed = make(chan struct{})
}

// Changed is closed at the next change of a pod the daemon shows.
func (n *Node) Changed(context.Context) <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.changed
}

// Node is the Node the daemon computes (`podhost get nodes`).
func (n *Node) Node(ctx context.Context) (*corev1.Node, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	node, err := n.client.CoreV1().Nodes().Get(ctx, n.name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("get node %s: %w", n.name, err)
	}
	return node, nil
}

// Pods lists every pod the daemon runs, with status, as it is now.
func (n *Node) Pods(ctx context.Context) ([]*corev1.Pod, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	l, err := n.client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list pods: %w", err)
	}
	out := make([]*corev1.Pod, len(l.Items))
	for i := range l.Items {
		out[i] = &l.Items[i]
	}
	return out, nil
}

// SourcesReady: the daemon's /readyz answers 200 — its first manifest
// snapshot is applied and every pod of it synced once (and containerd
// answers: during an outage no mirror pod is deleted as an orphan).
func (n *Node) SourcesReady(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	return n.client.CoreV1().RESTClient().Get().AbsPath("/readyz").Do(ctx).Error() == nil
}

// Name is the Node's name.
func (n *Node) Name() string { return n.name }

// WatchEvents calls handle with every Event the daemon records or updates
// from now until ctx ends (not those it held before: they were sent by an
// earlier run, or are history). A daemon that does not answer, or
// restarts, is waited for (every 100 ms doubling to 7 s); what it recorded
// while the watch was down is not replayed.
func (n *Node) WatchEvents(ctx context.Context, handle func(*corev1.Event)) {
	events := n.client.CoreV1().Events(metav1.NamespaceAll)
	for backoff := 100 * time.Millisecond; ctx.Err() == nil; backoff = min(2*backoff, 7*time.Second) {
		lctx, cancel := context.WithTimeout(ctx, callTimeout)
		l, err := events.List(lctx, metav1.ListOptions{})
		cancel()
		if err == nil {
			if n.watchEvents(ctx, l.ResourceVersion, handle) {
				backoff = 100 * time.Millisecond
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
	}
}

// watchEvents follows the events from rv until the watch cannot go on;
// true when it delivered something.
func (n *Node) watchEvents(ctx context.Context, rv string, handle func(*corev1.Event)) bool {
	lw := &cache.ListWatch{WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		return n.client.CoreV1().Events(metav1.NamespaceAll).Watch(ctx, o)
	}}
	w, err := watchtools.NewRetryWatcherWithContext(ctx, rv, lw)
	if err != nil {
		return false
	}
	defer w.Stop()
	delivered := false
	for {
		select {
		case <-ctx.Done():
			return delivered
		case <-w.Done():
			return delivered
		case e, ok := <-w.ResultChan():
			if !ok {
				return delivered
			}
			if ev, isEvent := e.Object.(*corev1.Event); isEvent && (e.Type == watch.Added || e.Type == watch.Modified) {
				handle(ev)
				delivered = true
			}
		}
	}
}
