package qos

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func rl(kv ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i+1 < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

func ctr(name string, req, lim corev1.ResourceList) corev1.Container {
	return corev1.Container{Name: name, Resources: corev1.ResourceRequirements{Requests: req, Limits: lim}}
}

func sidecar(name string, req corev1.ResourceList) corev1.Container {
	always := corev1.ContainerRestartPolicyAlways
	c := ctr(name, req, nil)
	c.RestartPolicy = &always
	return c
}

func pod(containers []corev1.Container, inits ...corev1.Container) *corev1.Pod {
	return &corev1.Pod{Spec: corev1.PodSpec{Containers: containers, InitContainers: inits}}
}

func TestPodQOS(t *testing.T) {
	full := rl("cpu", "1", "memory", "1Gi")
	tests := []struct {
		name string
		pod  *corev1.Pod
		want corev1.PodQOSClass
	}{
		{"no resources", pod([]corev1.Container{ctr("a", nil, nil)}), corev1.PodQOSBestEffort},
		{"zero requests are best effort", pod([]corev1.Container{ctr("a", rl("cpu", "0"), nil)}), corev1.PodQOSBestEffort},
		{"only non-qos resources", pod([]corev1.Container{ctr("a", rl("ephemeral-storage", "1Gi"), nil)}), corev1.PodQOSBestEffort},
		{"guaranteed", pod([]corev1.Container{ctr("a", full, full)}), corev1.PodQOSGuaranteed},
		{"guaranteed with init", pod([]corev1.Container{ctr("a", full, full)}, ctr("i", full, full)), corev1.PodQOSGuaranteed},
		{"init without limits breaks guaranteed", pod([]corev1.Container{ctr("a", full, full)}, ctr("i", nil, nil)), corev1.PodQOSBurstable},
		{"limits only on memory", pod([]corev1.Container{ctr("a", rl("memory", "1Gi"), rl("memory", "1Gi"))}), corev1.PodQOSBurstable},
		{"requests below limits", pod([]corev1.Container{ctr("a", rl("cpu", "500m", "memory", "1Gi"), full)}), corev1.PodQOSBurstable},
		{"limits without requests counted", pod([]corev1.Container{ctr("a", nil, full)}), corev1.PodQOSBurstable},
		{"one of two best effort", pod([]corev1.Container{ctr("a", full, full), ctr("b", nil, nil)}), corev1.PodQOSBurstable},
		{"status wins", &corev1.Pod{Status: corev1.PodStatus{QOSClass: corev1.PodQOSGuaranteed}}, corev1.PodQOSGuaranteed},
		{"pod level guaranteed", &corev1.Pod{Spec: corev1.PodSpec{
			Resources:  &corev1.ResourceRequirements{Requests: full, Limits: full},
			Containers: []corev1.Container{ctr("a", nil, nil)},
		}}, corev1.PodQOSGuaranteed},
		{"pod level burstable", &corev1.Pod{Spec: corev1.PodSpec{
			Resources:  &corev1.ResourceRequirements{Requests: rl("memory", "1Gi")},
			Containers: []corev1.Container{ctr("a", full, full)},
		}}, corev1.PodQOSBurstable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := PodQOS(tt.pod); got != tt.want {
				t.Errorf("PodQOS = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestOOMScoreAdj(t *testing.T) {
	const capacity = 10 << 30 // 10Gi
	full := rl("cpu", "1", "memory", "1Gi")
	burst := func(mem string) *corev1.Pod {
		return pod([]corev1.Container{ctr("a", rl("memory", mem), nil)})
	}
	tests := []struct {
		name     string
		pod      *corev1.Pod
		ctr      string
		capacity int64
		want     int
	}{
		{"guaranteed", pod([]corev1.Container{ctr("a", full, full)}), "a", capacity, -997},
		{"best effort", pod([]corev1.Container{ctr("a", nil, nil)}), "a", capacity, 1000},
		{"best effort node-critical", critical(pod([]corev1.Container{ctr("a", nil, nil)}), SystemNodeCritical), "a", capacity, -997},
		{"burstable node-critical", critical(burst("1Gi"), SystemNodeCritical), "a", capacity, -997},
		{"burstable cluster-critical is not node-critical", critical(burst("1Gi"), "system-cluster-critical"), "a", capacity, 900},
		{"burstable 10%", burst("1Gi"), "a", capacity, 900},
		{"burstable rounds", burst("1"), "a", capacity, 999},
		{"burstable huge request clamps to 3", burst("20Gi"), "a", capacity, 3},
		{"burstable whole machine clamps to 3", burst("10Gi"), "a", capacity, 3},
		{"burstable unknown capacity", burst("1Gi"), "a", 0, 999},
		{"burstable other container without memory", pod([]corev1.Container{
			ctr("a", rl("memory", "1Gi"), nil), ctr("b", rl("cpu", "1"), nil),
		}), "b", capacity, 999},
		{"sidecar no higher than smallest regular", pod(
			[]corev1.Container{ctr("a", rl("memory", "2Gi"), nil)},
			sidecar("s", rl("memory", "1Gi")),
		), "s", capacity, 800},
		{"pod-level memory shared", &corev1.Pod{Spec: corev1.PodSpec{
			Resources:  &corev1.ResourceRequirements{Requests: rl("memory", "4Gi")},
			Containers: []corev1.Container{ctr("a", rl("memory", "1Gi"), nil), ctr("b", nil, nil)},
		}}, "b", capacity, 850},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := find(tt.pod, tt.ctr)
			if got := OOMScoreAdj(tt.pod, c, tt.capacity); got != tt.want {
				t.Errorf("OOMScoreAdj = %d, want %d", got, tt.want)
			}
		})
	}
}

func critical(p *corev1.Pod, class string) *corev1.Pod {
	p.Spec.PriorityClassName = class
	return p
}

func find(p *corev1.Pod, name string) *corev1.Container {
	for i := range p.Spec.Containers {
		if p.Spec.Containers[i].Name == name {
			return &p.Spec.Containers[i]
		}
	}
	for i := range p.Spec.InitContainers {
		if p.Spec.InitContainers[i].Name == name {
			return &p.Spec.InitContainers[i]
		}
	}
	return nil
}

func TestPodRequests(t *testing.T) {
	tests := []struct {
		name     string
		pod      *corev1.Pod
		cpu, mem string
	}{
		{"sum of containers", pod([]corev1.Container{
			ctr("a", rl("cpu", "100m", "memory", "100Mi"), nil),
			ctr("b", rl("cpu", "200m"), nil),
		}), "300m", "100Mi"},
		{"init larger wins per resource", pod(
			[]corev1.Container{ctr("a", rl("cpu", "100m", "memory", "100Mi"), nil)},
			ctr("i", rl("cpu", "1", "memory", "10Mi"), nil),
		), "1", "100Mi"},
		{"sidecars add to app and to later init", pod(
			[]corev1.Container{ctr("a", rl("cpu", "100m"), nil)},
			sidecar("s", rl("cpu", "200m")),
			ctr("i", rl("cpu", "250m"), nil),
		), "450m", "0"},
		{"pod level and overhead", &corev1.Pod{Spec: corev1.PodSpec{
			Resources:  &corev1.ResourceRequirements{Requests: rl("cpu", "2")},
			Overhead:   rl("cpu", "100m"),
			Containers: []corev1.Container{ctr("a", rl("cpu", "1", "memory", "1Gi"), nil)},
		}}, "2100m", "1Gi"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := PodRequests(tt.pod)
			if c := got[corev1.ResourceCPU]; c.Cmp(resource.MustParse(tt.cpu)) != 0 {
				t.Errorf("cpu = %s, want %s", c.String(), tt.cpu)
			}
			if m := got[corev1.ResourceMemory]; m.Cmp(resource.MustParse(tt.mem)) != 0 {
				t.Errorf("memory = %s, want %s", m.String(), tt.mem)
			}
		})
	}
}

func TestCPUConversions(t *testing.T) {
	for _, tt := range []struct {
		milli  int64
		shares uint64
		quota  int64
	}{
		{0, 2, 0},
		{1, 2, 1000},
		{10, 10, 1000},
		{250, 256, 25000},
		{1000, 1024, 100000},
		{1000000, 262144, 100000000},
	} {
		if got := MilliCPUToShares(tt.milli); got != tt.shares {
			t.Errorf("MilliCPUToShares(%d) = %d, want %d", tt.milli, got, tt.shares)
		}
		if got := MilliCPUToQuota(tt.milli, QuotaPeriod); got != tt.quota {
			t.Errorf("MilliCPUToQuota(%d) = %d, want %d", tt.milli, got, tt.quota)
		}
	}
}
