package daemon

import (
	"context"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/ops/metrics"
	"github.com/podhost/podhost/internal/services/api"
)

// observeBackend serves the API's observability endpoints.
type observeBackend struct {
	*backend
	metrics *metrics.Metrics
	stats   metrics.StatsSource
}

// Metrics serves the Prometheus registry.
func (b observeBackend) Metrics() http.Handler { return b.metrics.Handler() }

// Top reads the pod cgroups twice, window apart (kubectl top's CPU is a
// rate, as metrics-server computes it), and reports the working set.
func (b observeBackend) Top(ctx context.Context, namespace string, window time.Duration) ([]api.PodMetrics, error) {
	var pods []*corev1.Pod
	for _, p := range b.Pods() {
		if namespace == "" || p.Namespace == namespace {
			pods = append(pods, p)
		}
	}
	before, err := metrics.Sample(pods, b.stats)
	if err != nil {
		return nil, err
	}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(window):
	}
	after, err := metrics.Sample(pods, b.stats)
	if err != nil {
		return nil, err
	}
	var out []api.PodMetrics
	for _, t := range metrics.Rates(before, after) {
		pm := api.PodMetrics{Namespace: t.Namespace, Name: t.Name, CPUMillis: t.CPUMillis, MemoryBytes: t.MemoryBytes}
		for _, c := range t.Containers {
			pm.Containers = append(pm.Containers, api.ContainerMetrics{Name: c.Name, CPUMillis: c.CPUMillis, MemoryBytes: c.MemoryBytes})
		}
		out = append(out, pm)
	}
	return out, nil
}
