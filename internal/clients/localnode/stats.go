package localnode

import (
	"context"
	"fmt"
	"io"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/procfs"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// maxMetricsBytes bounds the daemon's /metrics read for a summary.
const maxMetricsBytes = 32 << 20

// Summary is the kubelet's stats summary (/stats/summary) from what the
// daemon exposes: each pod's and container's cumulative CPU time and
// memory working set and usage from its /metrics (read from the cgroups
// at scrape time, cAdvisor's names), the node's CPU time and memory in
// use from /proc (as the daemon's NodeMetrics: MemTotal less
// MemAvailable), start times from the pods' status. Not there: CPU rates
// (usageNanoCores), network, filesystem, rlimit, swap and system
// containers.
func (n *Node) Summary(ctx context.Context) (*statsv1alpha1.Summary, error) {
	pods, err := n.Pods(ctx)
	if err != nil {
		return nil, err
	}
	node, err := n.Node(ctx)
	if err != nil {
		return nil, err
	}
	families, err := n.metrics(ctx)
	if err != nil {
		return nil, err
	}
	now := metav1.Now()
	sum := &statsv1alpha1.Summary{Node: statsv1alpha1.NodeStats{NodeName: n.name, StartTime: node.CreationTimestamp}}
	if sum.Node.CPU, sum.Node.Memory, err = nodeUsage(now); err != nil {
		return nil, err
	}
	sum.Pods = podStats(pods, cgroupSamples(families), now)
	return sum, nil
}

// metrics reads the daemon's /metrics.
func (n *Node) metrics(ctx context.Context) (map[string]*dto.MetricFamily, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	body, err := n.client.CoreV1().RESTClient().Get().AbsPath("/metrics").Stream(ctx)
	if err != nil {
		return nil, fmt.Errorf("the daemon's metrics: %w", err)
	}
	defer body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(io.LimitReader(body, maxMetricsBytes))
	if err != nil {
		return nil, fmt.Errorf("the daemon's metrics: %w", err)
	}
	return fams, nil
}

// sample is a pod's or container's cgroup readings.
type sample struct{ cpuSeconds, workingSet, usage *float64 }

// cgroupKey is namespace, pod, container ("": the pod's cgroup).
type cgroupKey struct{ namespace, pod, container string }

func cgroupSamples(fams map[string]*dto.MetricFamily) map[cgroupKey]*sample {
	out := map[cgroupKey]*sample{}
	read := func(name string, set func(*sample, float64)) {
		f := fams[name]
		if f == nil {
			return
		}
		for _, m := range f.GetMetric() {
			var k cgroupKey
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "namespace":
					k.namespace = l.GetValue()
				case "pod":
					k.pod = l.GetValue()
				case "container":
					k.container = l.GetValue()
				}
			}
			s := out[k]
			if s == nil {
				s = &sample{}
				out[k] = s
			}
			v := m.GetCounter().GetValue() + m.GetGauge().GetValue()
			set(s, v)
		}
	}
	read("container_cpu_usage_seconds_total", func(s *sample, v float64) { s.cpuSeconds = &v })
	read("container_memory_working_set_bytes", func(s *sample, v float64) { s.workingSet = &v })
	read("container_memory_usage_bytes", func(s *sample, v float64) { s.usage = &v })
	return out
}

func podStats(pods []*corev1.Pod, samples map[cgroupKey]*sample, now metav1.Time) []statsv1alpha1.PodStats {
	var out []statsv1alpha1.PodStats
	for _, p := range pods {
		ps := statsv1alpha1.PodStats{PodRef: statsv1alpha1.PodReference{Name: p.Name, Namespace: p.Namespace, UID: string(p.UID)}}
		if p.Status.StartTime != nil {
			ps.StartTime = *p.Status.StartTime
		}
		if s := samples[cgroupKey{p.Namespace, p.Name, ""}]; s != nil {
			ps.CPU, ps.Memory = s.cpu(now), s.memory(now)
		}
		for _, cs := range append(append([]corev1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
			s := samples[cgroupKey{p.Namespace, p.Name, cs.Name}]
			if s == nil || cs.State.Running == nil {
				continue
			}
			ps.Containers = append(ps.Containers, statsv1alpha1.ContainerStats{Name: cs.Name,
				StartTime: cs.State.Running.StartedAt, CPU: s.cpu(now), Memory: s.memory(now)})
		}
		out = append(out, ps)
	}
	return out
}

func (s *sample) cpu(now metav1.Time) *statsv1alpha1.CPUStats {
	if s.cpuSeconds == nil {
		return nil
	}
	ns := uint64(*s.cpuSeconds * float64(time.Second))
	return &statsv1alpha1.CPUStats{Time: now, UsageCoreNanoSeconds: &ns}
}

func (s *sample) memory(now metav1.Time) *statsv1alpha1.MemoryStats {
	if s.workingSet == nil {
		return nil
	}
	ws := uint64(*s.workingSet)
	m := &statsv1alpha1.MemoryStats{Time: now, WorkingSetBytes: &ws}
	if s.usage != nil {
		u := uint64(*s.usage)
		m.UsageBytes = &u
	}
	return m
}

// nodeUsage: the CPU time of every CPU but idle and iowait, and the
// memory in use, from /proc.
func nodeUsage(now metav1.Time) (*statsv1alpha1.CPUStats, *statsv1alpha1.MemoryStats, error) {
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		return nil, nil, fmt.Errorf("node stats: %w", err)
	}
	st, err := fs.Stat()
	if err != nil {
		return nil, nil, fmt.Errorf("node stats: %w", err)
	}
	c := st.CPUTotal
	ns := uint64((c.User + c.Nice + c.System + c.IRQ + c.SoftIRQ + c.Steal) * float64(time.Second))
	mi, err := fs.Meminfo()
	if err != nil {
		return nil, nil, fmt.Errorf("node stats: %w", err)
	}
	mem := &statsv1alpha1.MemoryStats{Time: now}
	if mi.MemTotalBytes != nil && mi.MemAvailableBytes != nil {
		ws := *mi.MemTotalBytes - *mi.MemAvailableBytes
		avail := *mi.MemAvailableBytes
		mem.WorkingSetBytes, mem.AvailableBytes = &ws, &avail
	}
	return &statsv1alpha1.CPUStats{Time: now, UsageCoreNanoSeconds: &ns}, mem, nil
}
