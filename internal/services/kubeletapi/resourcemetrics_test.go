package kubeletapi

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// /metrics/resource is the kubelet's resource metrics of a summary, as
// metrics-server reads them.
func TestResourceMetrics(t *testing.T) {
	u := func(v uint64) *uint64 { return &v }
	at := metav1.NewTime(time.Unix(2000, 0))
	sum := &statsv1alpha1.Summary{
		Node: statsv1alpha1.NodeStats{NodeName: "box", CPU: &statsv1alpha1.CPUStats{Time: at, UsageCoreNanoSeconds: u(3e9)},
			Memory: &statsv1alpha1.MemoryStats{Time: at, WorkingSetBytes: u(1 << 20)}},
		Pods: []statsv1alpha1.PodStats{{PodRef: statsv1alpha1.PodReference{Name: "web", Namespace: "default"},
			CPU: &statsv1alpha1.CPUStats{Time: at, UsageCoreNanoSeconds: u(2e9)}, Memory: &statsv1alpha1.MemoryStats{Time: at, WorkingSetBytes: u(4096)},
			Containers: []statsv1alpha1.ContainerStats{{Name: "app", StartTime: metav1.NewTime(time.Unix(1000, 0)),
				CPU: &statsv1alpha1.CPUStats{Time: at, UsageCoreNanoSeconds: u(15e8)}, Memory: &statsv1alpha1.MemoryStats{Time: at, WorkingSetBytes: u(1024)}}}}},
	}
	w := httptest.NewRecorder()
	writeResourceMetrics(w, httptest.NewRequest("GET", "/metrics/resource", nil), sum)
	out := w.Body.String()
	for _, want := range []string{
		"node_cpu_usage_seconds_total 3 2000000",
		"node_memory_working_set_bytes 1.048576e+06 2000000",
		`container_cpu_usage_seconds_total{container="app",namespace="default",pod="web"} 1.5 2000000`,
		`container_memory_working_set_bytes{container="app",namespace="default",pod="web"} 1024 2000000`,
		`container_start_time_seconds{container="app",namespace="default",pod="web"} 1000`,
		`pod_cpu_usage_seconds_total{namespace="default",pod="web"} 2 2000000`,
		`pod_memory_working_set_bytes{namespace="default",pod="web"} 4096 2000000`,
		"resource_scrape_error 0",
		"# TYPE node_cpu_usage_seconds_total counter",
	} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("no line %q in\n%s", want, out)
		}
	}
}
