package spec

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// resourceFieldRef limits fall back to the node's allocatable when the
// limit is missing or zero, as the kubelet's MergeContainerResourceLimits
// (pkg/api/v1/resource/helpers.go), ephemeral-storage included.
func TestResourceFieldRefLimitFallback(t *testing.T) {
	p := testPod()
	p.Host.Allocatable = corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse("4"),
		corev1.ResourceMemory:           resource.MustParse("8Gi"),
		corev1.ResourceEphemeralStorage: resource.MustParse("90Gi"),
		"hugepages-2Mi":                 resource.MustParse("1Gi"), // the node has some; a pod without a limit still reads 0
	}
	tests := []struct {
		name, ref, divisor string
		limits             corev1.ResourceList
		want               string
	}{
		{"ephemeral-storage missing", "limits.ephemeral-storage", "1Gi", nil, "90"},
		{"ephemeral-storage zero", "limits.ephemeral-storage", "1Gi", corev1.ResourceList{corev1.ResourceEphemeralStorage: resource.MustParse("0")}, "90"},
		{"memory zero", "limits.memory", "1Mi", corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("0")}, "8192"},
		{"cpu missing", "limits.cpu", "", nil, "4"},
		{"cpu set", "limits.cpu", "1m", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}, "500"},
		{"request zero stays", "requests.memory", "", nil, "0"},
		{"hugepages limit missing: 0, not allocatable", "limits.hugepages-2Mi", "1Mi", nil, "0"},
		{"hugepages request missing", "requests.hugepages-2Mi", "", nil, "0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &corev1.Container{Name: "app", Resources: corev1.ResourceRequirements{Limits: tt.limits}}
			ref := &corev1.ResourceFieldSelector{Resource: tt.ref}
			if tt.divisor != "" {
				ref.Divisor = resource.MustParse(tt.divisor)
			}
			got, err := resourceValue(p, c, ref)
			if err != nil || got != tt.want {
				t.Fatalf("resourceValue = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}
