// Package cluster makes podhost a node of a Kubernetes cluster, as the
// kubelet is one: it registers the Node and keeps its status current
// (pkg/kubelet/kubelet_node_status.go), renews the node's Lease in
// kube-node-lease with the kubelet's own lease controller
// (k8s.io/component-helpers/apimachinery/lease), and publishes a mirror pod
// for every pod podhost runs (pkg/kubelet/pod/mirror_client.go), its status
// patched as the kubelet's status manager patches it; the daemon's events
// about them are posted as the kubelet's event recorder posts its own.
//
// The node is reached through Backend, which the daemon implements. The
// API server being unreachable never stops or slows a pod: every call is
// retried on the next period, and Run returns only when ctx ends.
package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	listerscorev1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// The kubelet's defaults (KubeletConfiguration).
const (
	// LeaseDuration is nodeLeaseDurationSeconds.
	LeaseDuration = 40 * time.Second
	// NodeStatusUpdateFrequency is how often the node status is computed
	// and sent when it changed (nodeStatusUpdateFrequency; also the
	// lease's renew interval, a quarter of its duration).
	NodeStatusUpdateFrequency = 10 * time.Second
	// NodeStatusReportFrequency is how often the status is sent when it
	// did not change (nodeStatusReportFrequency).
	NodeStatusReportFrequency = 5 * time.Minute
	// MirrorResyncPeriod: mirror pods are reconciled at least this often
	// besides on every change of a pod or of a mirror pod.
	MirrorResyncPeriod = 10 * time.Second
	// LeaseNamespace holds the nodes' leases.
	LeaseNamespace = corev1.NamespaceNodeLease
)

// Backend is the node as the cluster agent sees it: the daemon, reached
// through its local Kubernetes API (internal/clients/localnode).
type Backend interface {
	// Node is the Node as podhost computes it (`podhost get nodes`): name,
	// labels, capacity, allocatable, addresses, system info, conditions.
	// An error: the daemon does not answer.
	Node(ctx context.Context) (*corev1.Node, error)
	// Pods are every pod podhost runs, with status (spec.nodeName set);
	// a stopping one carries a deletionTimestamp. Read-only. An error: the
	// daemon does not answer (never an empty list for it).
	Pods(ctx context.Context) ([]*corev1.Pod, error)
	// SourcesReady: every manifest source delivered its first snapshot
	// (before that, a pod missing from Pods may just not be read yet).
	// Pods called after it returned true lists every pod.
	SourcesReady(ctx context.Context) bool
	// Changed is closed at the next change of a pod (or when ctx ends).
	Changed(ctx context.Context) <-chan struct{}
	// SetDeletionGrace gives the daemon's pod namespace/name the grace
	// period of its coming deletion (the kube API's DELETE with
	// gracePeriodSeconds).
	SetDeletionGrace(ctx context.Context, namespace, name string, seconds int64) error
	// Refusals are the manifest files the daemon refused, by path, with
	// its one-line reasons.
	Refusals(ctx context.Context) (map[string]string, error)
	// WatchEvents calls handle with each Event the daemon records (or
	// counts again) from now on, until ctx ends; it waits for a daemon
	// that does not answer.
	WatchEvents(ctx context.Context, handle func(*corev1.Event))
}

// Options configure an Agent.
type Options struct {
	// NodeName is the Node's name (the pods' spec.nodeName).
	NodeName string
	// ClusterDir is the daemon's cluster source dir
	// (config.ClusterManifestDir): the pods the cluster binds to this node
	// are written there. "": they are not run.
	ClusterDir string
	// NodeIP, when set, is the Node's InternalIP instead of the daemon's
	// (the kubelet's --node-ip).
	NodeIP string
	// KubeletPort is where the kubelet API listens (0: it does not), the
	// Node's status.daemonEndpoints.kubeletEndpoint.port.
	KubeletPort int32
	Logger      *slog.Logger
	// Periods; zero values are the kubelet's defaults above.
	LeaseDuration, StatusUpdate, StatusReport, MirrorResync time.Duration
}

// Agent is the cluster side of one node.
type Agent struct {
	client kubernetes.Interface
	b      Backend
	opts   Options
	log    *slog.Logger

	mu        sync.Mutex
	nodeUID   types.UID               // the registered Node's ("" until registered)
	podLister listerscorev1.PodLister // the pods bound to the node (nil until runMirrors watches them)
	daemonErr error                   // the last Backend.Node's error: the daemon does not answer
}

// New returns an agent for the API server client reaches.
func New(client kubernetes.Interface, b Backend, opts Options) *Agent {
	if opts.LeaseDuration == 0 {
		opts.LeaseDuration = LeaseDuration
	}
	if opts.StatusUpdate == 0 {
		opts.StatusUpdate = NodeStatusUpdateFrequency
	}
	if opts.StatusReport == 0 {
		opts.StatusReport = NodeStatusReportFrequency
	}
	if opts.MirrorResync == 0 {
		opts.MirrorResync = MirrorResyncPeriod
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Agent{client: client, b: b, opts: opts, log: opts.Logger.With("component", "cluster", "node", opts.NodeName)}
}

// ClientConfig reads a kubeconfig file (its current context) into a client
// config for the node, with podhost's user agent.
func ClientConfig(kubeconfig, userAgent string) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("cluster.kubeconfig %s: %w", kubeconfig, err)
	}
	cfg.UserAgent = userAgent
	return cfg, nil
}

// Run registers the Node (retrying until the API server answers), then
// renews the Lease, keeps the node status current and reconciles the
// mirror pods until ctx ends.
func (a *Agent) Run(ctx context.Context) {
	a.log.Info("joining the cluster")
	if !a.register(ctx) {
		return
	}
	var wg sync.WaitGroup
	wg.Go(func() { a.runLease(ctx) })
	wg.Go(func() { a.runNodeStatus(ctx) })
	wg.Go(func() { a.runMirrors(ctx) })
	wg.Go(func() { a.runEvents(ctx) })
	wg.Wait()
}

func (a *Agent) setNodeUID(uid types.UID) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.nodeUID = uid
}

func (a *Agent) getNodeUID() types.UID {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.nodeUID
}

// localNode is Backend.Node, remembering whether the daemon answered: the
// Lease is renewed only while it does (runLease).
func (a *Agent) localNode(ctx context.Context) (*corev1.Node, error) {
	n, err := a.b.Node(ctx)
	if err != nil {
		err = fmt.Errorf("the podhost daemon: %w", err)
	} else {
		a.publish(n)
	}
	a.mu.Lock()
	a.daemonErr = err
	a.mu.Unlock()
	return n, err
}

// publish sets on the daemon's Node what this process adds: the kubelet
// API's port and the InternalIP it is reached on.
func (a *Agent) publish(n *corev1.Node) {
	n.Status.DaemonEndpoints.KubeletEndpoint.Port = a.opts.KubeletPort
	if a.opts.NodeIP == "" {
		return
	}
	addrs := []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: a.opts.NodeIP}}
	for _, ad := range n.Status.Addresses {
		if ad.Type != corev1.NodeInternalIP {
			addrs = append(addrs, ad)
		}
	}
	n.Status.Addresses = addrs
}

func (a *Agent) getDaemonErr() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.daemonErr
}

// errorLog logs an error of a key once until the error changes or the
// key succeeds: an API server that is down is one line per object, not
// one per period.
type errorLog struct {
	log  *slog.Logger
	mu   sync.Mutex
	last map[string]string
}

func newErrorLog(log *slog.Logger) *errorLog { return &errorLog{log: log, last: map[string]string{}} }

func (e *errorLog) fail(key, msg string, err error, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.last[key] == err.Error() {
		return
	}
	e.last[key] = err.Error()
	e.log.Warn(msg, append(args, "err", err)...)
}

func (e *errorLog) ok(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.last, key)
}
