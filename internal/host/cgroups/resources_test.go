package cgroups

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestPodResources(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	withInit := func(p *corev1.Pod, r corev1.ResourceRequirements, sidecar bool) *corev1.Pod {
		c := corev1.Container{Name: "init", Resources: r}
		if sidecar {
			c.RestartPolicy = &always
		}
		p.Spec.InitContainers = append(p.Spec.InitContainers, c)
		return p
	}
	overhead := podWith(res("cpu=250m,memory=64Mi", "cpu=250m,memory=64Mi"))
	overhead.Spec.Overhead = list("cpu=50m,memory=16Mi")
	cases := []struct {
		name string
		pod  *corev1.Pod
		want Resources
	}{
		{"besteffort", podWith(res("", ""), res("", "")), Resources{CPUShares: 2}},
		{"guaranteed", podWith(res("cpu=500m,memory=128Mi", "cpu=500m,memory=128Mi"), res("cpu=1,memory=64Mi", "cpu=1,memory=64Mi")),
			Resources{CPUShares: 1536, CPUQuota: 150000, CPUPeriod: 100000, MemoryLimit: 192 << 20}},
		{"limits default requests", podWith(res("", "cpu=1,memory=1Gi")),
			Resources{CPUShares: 1024, CPUQuota: 100000, CPUPeriod: 100000, MemoryLimit: 1 << 30}},
		{"burstable: one container without memory limit", podWith(res("cpu=100m", "cpu=200m,memory=64Mi"), res("cpu=100m", "cpu=300m")),
			Resources{CPUShares: 204, CPUQuota: 50000, CPUPeriod: 100000}},
		{"burstable: one container without cpu limit", podWith(res("memory=10Mi", "memory=64Mi"), res("cpu=10m", "cpu=1,memory=64Mi")),
			Resources{CPUShares: 10, MemoryLimit: 128 << 20}},
		{"tiny request gets min shares", podWith(res("cpu=1m", "")), Resources{CPUShares: 2}},
		{"tiny limit gets min quota", podWith(res("", "cpu=1m,memory=1Mi")),
			Resources{CPUShares: 2, CPUQuota: 1000, CPUPeriod: 100000, MemoryLimit: 1 << 20}},
		{"init container without limit blocks pod limit",
			withInit(podWith(res("", "cpu=1,memory=1Gi")), res("cpu=100m", ""), false), Resources{CPUShares: 1024}},
		{"big init container raises pod",
			withInit(podWith(res("", "cpu=1,memory=1Gi")), res("", "cpu=2,memory=2Gi"), false),
			Resources{CPUShares: 2048, CPUQuota: 200000, CPUPeriod: 100000, MemoryLimit: 2 << 30}},
		{"sidecar adds up",
			withInit(podWith(res("", "cpu=1,memory=1Gi")), res("", "cpu=500m,memory=512Mi"), true),
			Resources{CPUShares: 1536, CPUQuota: 150000, CPUPeriod: 100000, MemoryLimit: 1536 << 20}},
		{"overhead", overhead, Resources{CPUShares: 307, CPUQuota: 30000, CPUPeriod: 100000, MemoryLimit: 80 << 20}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := PodResources(tc.pod); got != tc.want {
				t.Errorf("PodResources = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestConversions(t *testing.T) {
	for _, tc := range []struct{ shares, weight uint64 }{{0, 0}, {2, 1}, {1024, 39}, {262144, 10000}, {1, 1}} {
		if got := SharesToWeight(tc.shares); got != tc.weight {
			t.Errorf("SharesToWeight(%d) = %d, want %d", tc.shares, got, tc.weight)
		}
	}
	if got := MilliCPUToShares(1000000); got != MaxShares {
		t.Errorf("MilliCPUToShares(1000 cpus) = %d", got)
	}
	for _, tc := range []struct {
		r    Resources
		want uint64
	}{
		{Resources{}, 1<<64 - 1},
		{Resources{CPUQuota: 50000, CPUPeriod: 100000}, 500000},
		{Resources{CPUQuota: 1000}, 10000},
		{Resources{CPUQuota: 12345, CPUPeriod: 100000}, 130000},
	} {
		if got := cpuQuotaPerSecUSec(tc.r); got != tc.want {
			t.Errorf("cpuQuotaPerSecUSec(%+v) = %d, want %d", tc.r, got, tc.want)
		}
	}
}
