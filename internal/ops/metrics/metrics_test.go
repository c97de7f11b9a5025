package metrics

import (
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/host/cgroups"
)

// fakeStats serves stats by "uid" (pod) and "uid/id" (container).
type fakeStats map[string]cgroups.Stats

func (f fakeStats) PodStats(uid types.UID, _ corev1.PodQOSClass) (cgroups.Stats, error) {
	return f.get(string(uid))
}
func (f fakeStats) ContainerStats(uid types.UID, _ corev1.PodQOSClass, id string) (cgroups.Stats, error) {
	return f.get(string(uid) + "/" + id)
}
func (f fakeStats) get(k string) (cgroups.Stats, error) {
	if s, ok := f[k]; ok {
		return s, nil
	}
	return cgroups.Stats{}, fmt.Errorf("%s: %w", k, cgroups.ErrNoCgroup)
}

func runningPod(ns, name, uid string, phase corev1.PodPhase, containers ...string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid)},
		Status: corev1.PodStatus{Phase: phase, QOSClass: corev1.PodQOSBestEffort}}
	for i, c := range containers {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: c})
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{
			Name: c, Image: "busybox", ContainerID: "containerd://" + c + "id", RestartCount: int32(i + 1),
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}})
	}
	return p
}

// scrape serves the registry and parses it with the text parser.
func scrape(t *testing.T, m *Metrics) map[string]*dto.MetricFamily {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(rec.Body)
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return fams
}

func value(t *testing.T, fams map[string]*dto.MetricFamily, name string, labels map[string]string) float64 {
	t.Helper()
	f, ok := fams[name]
	if !ok {
		t.Fatalf("no family %s", name)
	}
	for _, m := range f.GetMetric() {
		match := true
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		for k, v := range labels {
			match = match && got[k] == v
		}
		if !match {
			continue
		}
		switch {
		case m.Gauge != nil:
			return m.GetGauge().GetValue()
		case m.Counter != nil:
			return m.GetCounter().GetValue()
		case m.Histogram != nil:
			return float64(m.GetHistogram().GetSampleCount())
		}
	}
	t.Fatalf("%s%v not found", name, labels)
	return 0
}

func TestHandlerServesEveryMetric(t *testing.T) {
	web := runningPod("default", "web", "u1", corev1.PodRunning, "app", "side")
	done := runningPod("jobs", "job", "u2", corev1.PodSucceeded)
	pods := func() []*corev1.Pod { return []*corev1.Pod{web, done} }
	stats := fakeStats{
		"u1":        {CPUUsageNanos: 3e9, MemoryUsage: 50 << 20, MemoryWorkingSet: 40 << 20, Pids: 9},
		"u1/appid":  {CPUUsageNanos: 2e9, MemoryUsage: 30 << 20, MemoryWorkingSet: 25 << 20, Pids: 5},
		"u1/sideid": {CPUUsageNanos: 1e9, MemoryUsage: 10 << 20, MemoryWorkingSet: 9 << 20, Pids: 2},
	}
	m := New()
	m.Register(NewPodsCollector(pods), NewCgroupCollector(pods, stats))
	m.ObserveSync("SyncPod", 20*time.Millisecond, nil)
	m.ObserveSync("SyncTerminatedPod", time.Millisecond, errors.New("busy"))
	m.ObservePodStart(2 * time.Second)
	m.ObserveImagePull(time.Second, nil)
	m.ObserveCNI("ADD", 30*time.Millisecond, nil)
	m.ObserveCNI("DEL", 30*time.Millisecond, errors.New("plugin failed"))
	fams := scrape(t, m)
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"podhost_pods", map[string]string{"phase": "Running"}, 1},
		{"podhost_pods", map[string]string{"phase": "Succeeded"}, 1},
		{"podhost_pods", map[string]string{"phase": "Failed"}, 0},
		{"podhost_container_restarts_total", map[string]string{"pod": "web", "container": "side"}, 2},
		{"container_memory_working_set_bytes", map[string]string{"namespace": "default", "pod": "web", "container": ""}, 40 << 20},
		{"container_memory_working_set_bytes", map[string]string{"pod": "web", "container": "app", "id": "appid", "image": "busybox"}, 25 << 20},
		{"container_memory_usage_bytes", map[string]string{"pod": "web", "container": "side"}, 10 << 20},
		{"container_cpu_usage_seconds_total", map[string]string{"pod": "web", "container": ""}, 3},
		{"container_threads", map[string]string{"pod": "web", "container": "app"}, 5},
		{"podhost_cgroup_read_errors", nil, 0},
		{"podhost_pod_sync_duration_seconds", map[string]string{"kind": "SyncPod", "result": "success"}, 1},
		{"podhost_pod_sync_duration_seconds", map[string]string{"kind": "SyncTerminatedPod", "result": "error"}, 1},
		{"podhost_pod_start_duration_seconds", nil, 1},
		{"podhost_image_pulls_total", map[string]string{"result": "success"}, 1},
		{"podhost_image_pull_duration_seconds", map[string]string{"result": "success"}, 1},
		{"podhost_cni_operation_duration_seconds", map[string]string{"operation": "ADD", "result": "success"}, 1},
		{"podhost_cni_operation_errors_total", map[string]string{"operation": "DEL"}, 1},
	} {
		if got := value(t, fams, tc.name, tc.labels); got != tc.want {
			t.Errorf("%s%v = %v, want %v", tc.name, tc.labels, got, tc.want)
		}
	}
	if _, ok := fams["go_goroutines"]; !ok {
		t.Error("no Go runtime metrics")
	}
}

// A container whose cgroup is gone (exited since its status) is skipped;
// a pod without a cgroup too; other read errors are flagged.
func TestSampleSkipsMissingCgroups(t *testing.T) {
	web := runningPod("default", "web", "u1", corev1.PodRunning, "app", "gone")
	pending := runningPod("default", "new", "u3", corev1.PodPending)
	got, err := Sample([]*corev1.Pod{web, pending}, fakeStats{"u1": {Pids: 1}, "u1/appid": {Pids: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || len(got[0].Containers) != 1 || got[0].Containers[0].Name != "app" {
		t.Fatalf("sample = %+v", got)
	}
}

func TestRates(t *testing.T) {
	t0 := time.Unix(1000, 0)
	before := []PodUsage{{Namespace: "b", Name: "x", UID: "u1", Pod: cgroups.Stats{Time: t0, CPUUsageNanos: 1e9},
		Containers: []ContainerUsage{{Name: "c", ID: "i", Stats: cgroups.Stats{Time: t0, CPUUsageNanos: 5e8}}}},
		{Namespace: "a", Name: "gone", UID: "u9", Pod: cgroups.Stats{Time: t0}}}
	after := []PodUsage{{Namespace: "b", Name: "x", UID: "u1", Pod: cgroups.Stats{Time: t0.Add(2 * time.Second), CPUUsageNanos: 2e9, MemoryWorkingSet: 7 << 20},
		Containers: []ContainerUsage{{Name: "c", ID: "i", Stats: cgroups.Stats{Time: t0.Add(2 * time.Second), CPUUsageNanos: 6e8, MemoryWorkingSet: 3 << 20}},
			{Name: "new", ID: "j", Stats: cgroups.Stats{Time: t0.Add(2 * time.Second)}}}},
		{Namespace: "a", Name: "fresh", UID: "u5", Pod: cgroups.Stats{Time: t0.Add(2 * time.Second)}}}
	got := Rates(before, after)
	if len(got) != 1 {
		t.Fatalf("rates = %+v (want only the pod read twice)", got)
	}
	want := PodTop{Namespace: "b", Name: "x", Usage: Usage{Name: "x", CPUMillis: 500, MemoryBytes: 7 << 20},
		Containers: []Usage{{Name: "c", CPUMillis: 50, MemoryBytes: 3 << 20}}}
	if fmt.Sprint(got[0]) != fmt.Sprint(want) {
		t.Errorf("rates = %+v, want %+v", got[0], want)
	}
}

// The cgroup collector over a fake v2 root: per-pod and per-container
// series read from the files.
func TestCgroupCollectorFakeRoot(t *testing.T) {
	root := t.TempDir()
	web := runningPod("default", "web", "u1", corev1.PodRunning, "app")
	pod := filepath.Join(root, "podhost/besteffort/podu1")
	for dir, f := range map[string][4]string{
		pod:                         {"usage_usec 1500000\n", "8388608\n", "inactive_file 1048576\n", "4\n"},
		filepath.Join(pod, "appid"): {"usage_usec 500000\n", "4194304\n", "inactive_file 0\n", "3\n"},
	} {
		for name, content := range map[string]string{"cpu.stat": f[0], "memory.current": f[1], "memory.stat": f[2], "pids.current": f[3]} {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	m := New()
	pods := func() []*corev1.Pod { return []*corev1.Pod{web} }
	m.Register(NewCgroupCollector(pods, cgroups.NewReader(root, true, cgroups.DriverCgroupfs, "podhost")))
	fams := scrape(t, m)
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"container_cpu_usage_seconds_total", map[string]string{"pod": "web", "container": ""}, 1.5},
		{"container_memory_working_set_bytes", map[string]string{"pod": "web", "container": ""}, 7 << 20},
		{"container_memory_usage_bytes", map[string]string{"pod": "web", "container": "app"}, 4 << 20},
		{"container_threads", map[string]string{"pod": "web", "container": "app"}, 3},
	} {
		if got := value(t, fams, tc.name, tc.labels); got != tc.want {
			t.Errorf("%s%v = %v, want %v", tc.name, tc.labels, got, tc.want)
		}
	}
}
