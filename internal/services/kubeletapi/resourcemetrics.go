package kubeletapi

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// The kubelet's resource metrics (pkg/kubelet/metrics/collectors/
// resource_metrics.go), names, help and labels as metrics-server scrapes
// them from /metrics/resource.
var (
	nodeCPUDesc = prometheus.NewDesc("node_cpu_usage_seconds_total",
		"Cumulative cpu time consumed by the node in core-seconds", nil, nil)
	nodeMemoryDesc = prometheus.NewDesc("node_memory_working_set_bytes",
		"Current working set of the node in bytes", nil, nil)
	containerStartDesc = prometheus.NewDesc("container_start_time_seconds",
		"Start time of the container since unix epoch in seconds", []string{"container", "pod", "namespace"}, nil)
	containerCPUDesc = prometheus.NewDesc("container_cpu_usage_seconds_total",
		"Cumulative cpu time consumed by the container in core-seconds", []string{"container", "pod", "namespace"}, nil)
	containerMemoryDesc = prometheus.NewDesc("container_memory_working_set_bytes",
		"Current working set of the container in bytes", []string{"container", "pod", "namespace"}, nil)
	podCPUDesc = prometheus.NewDesc("pod_cpu_usage_seconds_total",
		"Cumulative cpu time consumed by the pod in core-seconds", []string{"pod", "namespace"}, nil)
	podMemoryDesc = prometheus.NewDesc("pod_memory_working_set_bytes",
		"Current working set of the pod in bytes", []string{"pod", "namespace"}, nil)
	scrapeErrorDesc = prometheus.NewDesc("resource_scrape_error",
		"1 if there was an error while getting container metrics, 0 otherwise", nil, nil)
)

// summaryCollector collects one Summary.
type summaryCollector struct{ sum *statsv1alpha1.Summary }

func (c summaryCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{nodeCPUDesc, nodeMemoryDesc, containerStartDesc, containerCPUDesc,
		containerMemoryDesc, podCPUDesc, podMemoryDesc, scrapeErrorDesc} {
		ch <- d
	}
}

func (c summaryCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(scrapeErrorDesc, prometheus.GaugeValue, 0)
	n := c.sum.Node
	cpu(ch, nodeCPUDesc, n.CPU)
	memory(ch, nodeMemoryDesc, n.Memory)
	for _, p := range c.sum.Pods {
		ns, pod := p.PodRef.Namespace, p.PodRef.Name
		for _, ct := range p.Containers {
			if ct.StartTime.Unix() > 0 {
				ch <- prometheus.MustNewConstMetric(containerStartDesc, prometheus.GaugeValue,
					float64(ct.StartTime.UnixNano())/float64(time.Second), ct.Name, pod, ns)
			}
			cpu(ch, containerCPUDesc, ct.CPU, ct.Name, pod, ns)
			memory(ch, containerMemoryDesc, ct.Memory, ct.Name, pod, ns)
		}
		cpu(ch, podCPUDesc, p.CPU, pod, ns)
		memory(ch, podMemoryDesc, p.Memory, pod, ns)
	}
}

func cpu(ch chan<- prometheus.Metric, d *prometheus.Desc, s *statsv1alpha1.CPUStats, labels ...string) {
	if s == nil || s.UsageCoreNanoSeconds == nil {
		return
	}
	ch <- prometheus.NewMetricWithTimestamp(s.Time.Time, prometheus.MustNewConstMetric(d, prometheus.CounterValue,
		float64(*s.UsageCoreNanoSeconds)/float64(time.Second), labels...))
}

func memory(ch chan<- prometheus.Metric, d *prometheus.Desc, s *statsv1alpha1.MemoryStats, labels ...string) {
	if s == nil || s.WorkingSetBytes == nil {
		return
	}
	ch <- prometheus.NewMetricWithTimestamp(s.Time.Time, prometheus.MustNewConstMetric(d, prometheus.GaugeValue,
		float64(*s.WorkingSetBytes), labels...))
}

// writeResourceMetrics writes sum in the Prometheus text format.
func writeResourceMetrics(w http.ResponseWriter, r *http.Request, sum *statsv1alpha1.Summary) {
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(summaryCollector{sum}); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	promhttp.HandlerFor(reg, promhttp.HandlerOpts{}).ServeHTTP(w, r)
}
