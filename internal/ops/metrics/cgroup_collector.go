package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/podhost/podhost/internal/host/cgroups"
)

// cAdvisor's metric names and the kubelet's /metrics/cadvisor labels, so
// dashboards built for them work. The pod-level cgroup is reported with
// container="" (as the kubelet does); podhost has no pause container, so
// there is no container="POD" series.
var (
	cadvisorLabels = []string{"namespace", "pod", "container", "id", "image"}
	cpuDesc        = prometheus.NewDesc("container_cpu_usage_seconds_total", "Cumulative cpu time consumed in seconds.", cadvisorLabels, nil)
	wsDesc         = prometheus.NewDesc("container_memory_working_set_bytes", "Current working set in bytes.", cadvisorLabels, nil)
	memDesc        = prometheus.NewDesc("container_memory_usage_bytes", "Current memory usage in bytes, including all memory regardless of when it was accessed.", cadvisorLabels, nil)
	threadsDesc    = prometheus.NewDesc("container_threads", "Number of threads running inside the container (pids.current).", cadvisorLabels, nil)
	scrapeErrDesc  = prometheus.NewDesc("podhost_cgroup_read_errors", "1 when the last scrape could not read some cgroup files.", nil, nil)
)

// cgroupCollector reads every pod's cgroup files on scrape.
type cgroupCollector struct {
	list PodLister
	src  StatsSource
}

// NewCgroupCollector returns the collector of per-pod and per-container
// CPU, memory and thread counts read from the cgroups.
func NewCgroupCollector(list PodLister, src StatsSource) prometheus.Collector {
	return cgroupCollector{list: list, src: src}
}

func (c cgroupCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{cpuDesc, wsDesc, memDesc, threadsDesc, scrapeErrDesc} {
		ch <- d
	}
}

func (c cgroupCollector) Collect(ch chan<- prometheus.Metric) {
	usages, err := Sample(c.list(), c.src)
	failed := 0.0
	if err != nil {
		failed = 1
	}
	ch <- prometheus.MustNewConstMetric(scrapeErrDesc, prometheus.GaugeValue, failed)
	for _, u := range usages {
		emit(ch, u.Pod, u.Namespace, u.Name, "", "pod"+string(u.UID), "")
		for _, cu := range u.Containers {
			emit(ch, cu.Stats, u.Namespace, u.Name, cu.Name, cu.ID, cu.Image)
		}
	}
}

func emit(ch chan<- prometheus.Metric, s cgroups.Stats, labels ...string) {
	ch <- prometheus.MustNewConstMetric(cpuDesc, prometheus.CounterValue, float64(s.CPUUsageNanos)/1e9, labels...)
	ch <- prometheus.MustNewConstMetric(wsDesc, prometheus.GaugeValue, float64(s.MemoryWorkingSet), labels...)
	ch <- prometheus.MustNewConstMetric(memDesc, prometheus.GaugeValue, float64(s.MemoryUsage), labels...)
	ch <- prometheus.MustNewConstMetric(threadsDesc, prometheus.GaugeValue, float64(s.Pids), labels...)
}
