// Package metrics holds podhost's Prometheus metrics: the registry, the
// operation metrics the daemon's decorators observe (syncs, pod start
// latency, image pulls, CNI ADD/DEL) and the collectors read on scrape (pods
// by phase, container restarts, per-pod/per-container cgroup usage under
// cAdvisor's names). Core packages (syncer, podworkers, network) do not
// import it: internal/daemon wraps their dependencies.
package metrics

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Result label values.
const (
	ResultSuccess = "success"
	ResultError   = "error"
)

// Metrics is podhost's registry and its operation metrics.
type Metrics struct {
	reg          *prometheus.Registry
	syncDuration *prometheus.HistogramVec
	podStart     prometheus.Histogram
	pulls        *prometheus.CounterVec
	pullDuration *prometheus.HistogramVec
	cniDuration  *prometheus.HistogramVec
	cniErrors    *prometheus.CounterVec
}

// New returns Metrics registered in a fresh registry (with the Go and
// process collectors).
func New() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		syncDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "podhost_pod_sync_duration_seconds", Help: "Duration of one pod worker sync, by kind (SyncPod, SyncTerminatingPod, SyncTerminatingRuntimePod, SyncTerminatedPod) and result.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 14),
		}, []string{"kind", "result"}),
		podStart: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "podhost_pod_start_duration_seconds", Help: "Duration from podhost first seeing a pod to all its containers running (the kubelet's pod_start_duration_seconds).",
			Buckets: []float64{0.5, 1, 2, 3, 4, 5, 6, 8, 10, 20, 30, 45, 60, 120, 180, 240, 300, 360, 480, 600, 900, 1200},
		}),
		pulls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "podhost_image_pulls_total", Help: "Image pulls (EnsureImage calls that had to ask the registry or failed), by result.",
		}, []string{"result"}),
		pullDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "podhost_image_pull_duration_seconds", Help: "Duration of image pulls, by result.",
			Buckets: []float64{0.1, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600},
		}, []string{"result"}),
		cniDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "podhost_cni_operation_duration_seconds", Help: "Duration of CNI operations (ADD at pod network setup, DEL at teardown), by result.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 12),
		}, []string{"operation", "result"}),
		cniErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "podhost_cni_operation_errors_total", Help: "Failed CNI operations, by operation.",
		}, []string{"operation"}),
	}
	m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.syncDuration, m.podStart, m.pulls, m.pullDuration, m.cniDuration, m.cniErrors)
	return m
}

// Register adds scrape-time collectors (pods, cgroups).
func (m *Metrics) Register(cs ...prometheus.Collector) { m.reg.MustRegister(cs...) }

// Registry is the registry behind Handler (tests gather from it).
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// ObserveSync records one sync of kind.
func (m *Metrics) ObserveSync(kind string, d time.Duration, err error) {
	m.syncDuration.WithLabelValues(kind, result(err)).Observe(d.Seconds())
}

// ObservePodStart records one pod's start latency.
func (m *Metrics) ObservePodStart(d time.Duration) { m.podStart.Observe(d.Seconds()) }

// ObserveImagePull records one pull.
func (m *Metrics) ObserveImagePull(d time.Duration, err error) {
	r := result(err)
	m.pulls.WithLabelValues(r).Inc()
	m.pullDuration.WithLabelValues(r).Observe(d.Seconds())
}

// ObserveCNI records one CNI operation ("ADD" or "DEL").
func (m *Metrics) ObserveCNI(op string, d time.Duration, err error) {
	m.cniDuration.WithLabelValues(op, result(err)).Observe(d.Seconds())
	if err != nil {
		m.cniErrors.WithLabelValues(op).Inc()
	}
}

func result(err error) string {
	if err != nil {
		return ResultError
	}
	return ResultSuccess
}
