package daemon

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/host/network"
	"github.com/podhost/podhost/internal/host/runtime"
	"github.com/podhost/podhost/internal/kubelet/podcache"
	"github.com/podhost/podhost/internal/kubelet/podworkers"
	"github.com/podhost/podhost/internal/kubelet/syncer"
	"github.com/podhost/podhost/internal/model/podstate"
	"github.com/podhost/podhost/internal/model/runtimeapi"
	"github.com/podhost/podhost/internal/ops/metrics"
	"github.com/podhost/podhost/internal/services/api"
)

// Decorators that observe the syncer's dependencies and the pod workers'
// handler for Prometheus, so that no core package imports it.

// statusReader is the status manager's read side.
type statusReader interface {
	Status(uid types.UID) (corev1.PodStatus, bool)
}

// meteredHandler times every sync by kind and records each pod's start
// latency (first SyncPod seen → every app container running), once.
type meteredHandler struct {
	h        podworkers.SyncHandler
	m        *metrics.Metrics
	statuses statusReader

	mu        sync.Mutex
	firstSeen map[types.UID]time.Time
	started   map[types.UID]bool
}

func newMeteredHandler(h podworkers.SyncHandler, m *metrics.Metrics, st statusReader) *meteredHandler {
	return &meteredHandler{h: h, m: m, statuses: st, firstSeen: map[types.UID]time.Time{}, started: map[types.UID]bool{}}
}

func (d *meteredHandler) SyncPod(ctx context.Context, t podworkers.UpdateType, pod *corev1.Pod, running *podstate.Pod) (podworkers.SyncResult, error) {
	d.seen(pod)
	start := time.Now()
	res, err := d.h.SyncPod(ctx, t, pod, running)
	d.m.ObserveSync("SyncPod", time.Since(start), err)
	d.checkStarted(pod)
	return res, err
}

func (d *meteredHandler) SyncTerminatingPod(ctx context.Context, pod *corev1.Pod, running *podstate.Pod, grace int64) error {
	start := time.Now()
	err := d.h.SyncTerminatingPod(ctx, pod, running, grace)
	d.m.ObserveSync("SyncTerminatingPod", time.Since(start), err)
	return err
}

func (d *meteredHandler) SyncTerminatingRuntimePod(ctx context.Context, running *podstate.Pod) error {
	start := time.Now()
	err := d.h.SyncTerminatingRuntimePod(ctx, running)
	d.m.ObserveSync("SyncTerminatingRuntimePod", time.Since(start), err)
	return err
}

func (d *meteredHandler) SyncTerminatedPod(ctx context.Context, pod *corev1.Pod) error {
	start := time.Now()
	err := d.h.SyncTerminatedPod(ctx, pod)
	d.m.ObserveSync("SyncTerminatedPod", time.Since(start), err)
	if err == nil {
		d.mu.Lock()
		delete(d.firstSeen, pod.UID)
		delete(d.started, pod.UID)
		d.mu.Unlock()
	}
	return err
}

// seen records the first sight of a pod. A pod already running at its
// first sight (adopted after a podhost restart) is not measured.
func (d *meteredHandler) seen(pod *corev1.Pod) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.firstSeen[pod.UID]; ok {
		return
	}
	d.firstSeen[pod.UID] = time.Now()
	if st, ok := d.statuses.Status(pod.UID); ok && allRunning(pod, st) {
		d.started[pod.UID] = true
	}
}

func (d *meteredHandler) checkStarted(pod *corev1.Pod) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.started[pod.UID] {
		return
	}
	if st, ok := d.statuses.Status(pod.UID); ok && allRunning(pod, st) {
		d.started[pod.UID] = true
		d.m.ObservePodStart(time.Since(d.firstSeen[pod.UID]))
	}
}

// allRunning: every app container of the spec has a running status.
func allRunning(pod *corev1.Pod, st corev1.PodStatus) bool {
	running := 0
	for _, cs := range st.ContainerStatuses {
		if cs.State.Running != nil {
			running++
		}
	}
	return len(pod.Spec.Containers) > 0 && running == len(pod.Spec.Containers)
}

// meteredRuntime counts and times image pulls: EnsureImage calls that
// fetched from a registry (the pull hook ran).
// cachedLists is the manager's runtime: its full lists (at start, in
// housekeeping) also set the pod cache, so the first sync of a pod they did
// not contain lists nothing.
type cachedLists struct {
	*runtime.Runtime
	cache *podcache.Cache
}

func (r cachedLists) ListPods(ctx context.Context) ([]*podstate.Pod, error) {
	return r.cache.ListPods(ctx)
}

type meteredRuntime struct {
	syncer.Runtime
	m *metrics.Metrics
}

func (r meteredRuntime) EnsureImage(ctx context.Context, ref string, policy corev1.PullPolicy) (runtimeapi.Image, error) {
	var pullStart time.Time
	ctx = runtimeapi.WithPullStarted(ctx, func() { pullStart = time.Now() })
	img, err := r.Runtime.EnsureImage(ctx, ref, policy)
	if !pullStart.IsZero() && !errors.Is(err, context.Canceled) {
		r.m.ObserveImagePull(time.Since(pullStart), err)
	}
	return img, err
}

// meteredNetwork times CNI ADD (Setup) and DEL (Teardown).
type meteredNetwork struct {
	syncer.Network
	m *metrics.Metrics
}

func (n meteredNetwork) Setup(ctx context.Context, id, netns string, ports []network.PortMapping) (*network.Result, error) {
	start := time.Now()
	res, err := n.Network.Setup(ctx, id, netns, ports)
	n.m.ObserveCNI("ADD", time.Since(start), err)
	return res, err
}

func (n meteredNetwork) Teardown(ctx context.Context, id, netns string, ports []network.PortMapping) error {
	start := time.Now()
	err := n.Network.Teardown(ctx, id, netns, ports)
	n.m.ObserveCNI("DEL", time.Since(start), err)
	return err
}

// serveMetrics serves /metrics on addr until ctx is done, within the API's
// limits (idle timeout, connection cap).
func serveMetrics(ctx context.Context, addr string, h http.Handler) error {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", h)
	srv := &http.Server{Handler: mux}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(api.DefaultLimits.Apply(srv, l)); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
