package resize

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/podhost/podhost/internal/model/podstate"
	"github.com/podhost/podhost/internal/model/wellknown"
)

func req(cpu, mem string) corev1.ResourceRequirements {
	l := corev1.ResourceList{}
	if cpu != "" {
		l[corev1.ResourceCPU] = resource.MustParse(cpu)
	}
	if mem != "" {
		l[corev1.ResourceMemory] = resource.MustParse(mem)
	}
	return corev1.ResourceRequirements{Limits: l}
}

func TestOf(t *testing.T) {
	restart := func(n corev1.ResourceName) []corev1.ContainerResizePolicy {
		return []corev1.ContainerResizePolicy{{ResourceName: n, RestartPolicy: corev1.RestartContainer}}
	}
	notRequired := []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.NotRequired}}
	tests := []struct {
		name     string
		spec     corev1.ResourceRequirements
		policy   []corev1.ContainerResizePolicy
		actuated string // label; "" none
		want     Kind
	}{
		{"no label: updated once (actuated unknown)", req("1", "1Gi"), nil, "", Update},
		{"equal", req("1", "1Gi"), nil, Label(req("1000m", "1024Mi")), None},
		{"cpu up", req("2", "1Gi"), nil, Label(req("1", "1Gi")), Update},
		{"memory down, NotRequired", req("1", "512Mi"), notRequired, Label(req("1", "1Gi")), Update},
		{"memory changed, RestartContainer memory", req("1", "512Mi"), restart(corev1.ResourceMemory), Label(req("1", "1Gi")), Restart},
		{"cpu changed, RestartContainer memory", req("2", "1Gi"), restart(corev1.ResourceMemory), Label(req("1", "1Gi")), Update},
		{"cpu limit removed, RestartContainer cpu", req("", "1Gi"), restart(corev1.ResourceCPU), Label(req("1", "1Gi")), Restart},
		{"bad label: updated", req("1", "1Gi"), nil, "{", Update},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := &corev1.Container{Name: "a", Resources: tt.spec, ResizePolicy: tt.policy}
			c := &podstate.Container{Labels: map[string]string{}}
			if tt.actuated != "" {
				c.Labels[wellknown.LabelResources] = tt.actuated
			}
			if got := Of(spec, c); got != tt.want {
				t.Errorf("Of = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestPendingAndAllocation(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Resources: req("2", "2Gi")}}}}
	pod.Annotations = map[string]string{wellknown.AnnotationResizePending: "Infeasible: Node didn't have enough capacity: cpu"}
	if r, m := Pending(pod); r != corev1.PodReasonInfeasible || m != "Node didn't have enough capacity: cpu" {
		t.Errorf("Pending = %q, %q", r, m)
	}
	alloc := map[string]corev1.ResourceRequirements{"a": req("1", "1Gi")}
	got := WithAllocation(pod, alloc)
	if !Equal(got.Spec.Containers[0].Resources, req("1", "1Gi")) || !Equal(pod.Spec.Containers[0].Resources, req("2", "2Gi")) {
		t.Errorf("WithAllocation: got %v, original %v", got.Spec.Containers[0].Resources, pod.Spec.Containers[0].Resources)
	}
	if a := Allocation(got); !Equal(a["a"], req("1", "1Gi")) {
		t.Errorf("Allocation = %v", a)
	}
}
