package localnode

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The daemon's cgroup metrics (cAdvisor names, the pod cgroup as
// container="") become the summary's pod and container stats; a container
// that does not run has none.
func TestPodStatsFromTheDaemonsMetrics(t *testing.T) {
	text := `# TYPE container_cpu_usage_seconds_total counter
container_cpu_usage_seconds_total{namespace="default",pod="web",container="",id="/p",image=""} 2.5
container_cpu_usage_seconds_total{namespace="default",pod="web",container="app",id="/p/a",image="busybox"} 2
container_cpu_usage_seconds_total{namespace="default",pod="web",container="old",id="/p/o",image="busybox"} 0.5
# TYPE container_memory_working_set_bytes gauge
container_memory_working_set_bytes{namespace="default",pod="web",container="",id="/p",image=""} 4096
container_memory_working_set_bytes{namespace="default",pod="web",container="app",id="/p/a",image="busybox"} 1024
# TYPE container_memory_usage_bytes gauge
container_memory_usage_bytes{namespace="default",pod="web",container="app",id="/p/a",image="busybox"} 2048
`
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	started := metav1.NewTime(time.Unix(1000, 0))
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "u1"},
		Status: corev1.PodStatus{StartTime: &started, ContainerStatuses: []corev1.ContainerStatus{
			{Name: "app", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}}},
			{Name: "old", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{}}}}}}
	got := podStats([]*corev1.Pod{pod, {ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "new"}}}, cgroupSamples(fams), metav1.Now())
	if len(got) != 2 || got[1].CPU != nil || len(got[1].Containers) != 0 {
		t.Fatalf("pods: %+v", got)
	}
	ps := got[0]
	if ps.PodRef.UID != "u1" || !ps.StartTime.Equal(&started) || *ps.CPU.UsageCoreNanoSeconds != 2500000000 || *ps.Memory.WorkingSetBytes != 4096 {
		t.Errorf("pod: %+v cpu %d mem %d", ps.PodRef, *ps.CPU.UsageCoreNanoSeconds, *ps.Memory.WorkingSetBytes)
	}
	if len(ps.Containers) != 1 {
		t.Fatalf("containers: %+v", ps.Containers)
	}
	c := ps.Containers[0]
	if c.Name != "app" || *c.CPU.UsageCoreNanoSeconds != 2000000000 || *c.Memory.WorkingSetBytes != 1024 || *c.Memory.UsageBytes != 2048 {
		t.Errorf("container: %+v", c)
	}
}

func TestNodeUsage(t *testing.T) {
	cpu, mem, err := nodeUsage(metav1.Now())
	if err != nil {
		t.Fatal(err)
	}
	if *cpu.UsageCoreNanoSeconds == 0 || mem.WorkingSetBytes == nil || *mem.WorkingSetBytes == 0 {
		t.Errorf("node: cpu %d, memory %v", *cpu.UsageCoreNanoSeconds, mem.WorkingSetBytes)
	}
}
