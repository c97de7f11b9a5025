package daemon

import (
	"context"
	"net/http"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/model/records"
	"github.com/podhost/podhost/internal/ops/metrics"
	"github.com/podhost/podhost/internal/services/api"
)

// observeBackend serves the API's observability endpoints.
type observeBackend struct {
	*backend
	metrics *metrics.Metrics
	stats   metrics.StatsSource
}

// Changed is the status manager's change signal.
func (b observeBackend) Changed() <-chan struct{} { return b.st.Changed() }

// Metrics serves the Prometheus registry.
func (b observeBackend) Metrics() http.Handler { return b.metrics.Handler() }

// AllEvents returns the events of every pod in namespace, oldest first.
func (b observeBackend) AllEvents(namespace string) ([]api.ObjectEvent, error) {
	var out []api.ObjectEvent
	add := func(ns, name string, evs []records.Event) {
		for _, e := range evs {
			out = append(out, api.ObjectEvent{Namespace: ns, Pod: name,
				Event: api.Event{Time: e.Time, Type: e.Type, Reason: e.Reason, Message: e.Message, First: e.First, Count: e.Count}})
		}
	}
	pods := b.Pods()
	for _, p := range pods {
		if namespace != "" && p.Namespace != namespace {
			continue
		}
		evs, err := b.st.Events(p.UID)
		if err != nil {
			return nil, err
		}
		add(p.Namespace, p.Name, evs)
	}
	for _, pe := range b.deletedPodEvents(namespace, pods) {
		add(pe.Namespace, pe.Name, pe.Events)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time.Before(out[j].Time) })
	return out, nil
}

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
