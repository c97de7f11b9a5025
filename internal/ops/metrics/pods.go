package metrics

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
)

// PodLister returns the pods podhost knows, with their statuses.
type PodLister func() []*corev1.Pod

var (
	podsDesc     = prometheus.NewDesc("podhost_pods", "Pods podhost manages, by phase.", []string{"phase"}, nil)
	restartsDesc = prometheus.NewDesc("podhost_container_restarts_total",
		"Restarts of a container as its status counts them (kube-state-metrics' kube_pod_container_status_restarts_total).",
		[]string{"namespace", "pod", "container"}, nil)
)

// podsCollector reports pods by phase and container restart counts from
// the statuses at scrape time.
type podsCollector struct{ list PodLister }

// NewPodsCollector returns the collector of pod phases and restarts.
func NewPodsCollector(list PodLister) prometheus.Collector { return podsCollector{list: list} }

func (c podsCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- podsDesc
	ch <- restartsDesc
}

func (c podsCollector) Collect(ch chan<- prometheus.Metric) {
	phases := map[corev1.PodPhase]int{
		corev1.PodPending: 0, corev1.PodRunning: 0, corev1.PodSucceeded: 0, corev1.PodFailed: 0, corev1.PodUnknown: 0,
	}
	for _, p := range c.list() {
		phase := p.Status.Phase
		if phase == "" {
			phase = corev1.PodPending
		}
		phases[phase]++
		for _, cs := range append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
			ch <- prometheus.MustNewConstMetric(restartsDesc, prometheus.CounterValue, float64(cs.RestartCount), p.Namespace, p.Name, cs.Name)
		}
	}
	for phase, n := range phases {
		ch <- prometheus.MustNewConstMetric(podsDesc, prometheus.GaugeValue, float64(n), string(phase))
	}
}

// ContainerID strips the runtime prefix of a status's containerID.
func ContainerID(statusID string) string {
	if _, id, ok := strings.Cut(statusID, "://"); ok {
		return id
	}
	return statusID
}
