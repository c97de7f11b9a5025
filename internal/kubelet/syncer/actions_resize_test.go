package syncer

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/podhost/podhost/internal/desired/manifest"
	"github.com/podhost/podhost/internal/kubelet/resize"
	"github.com/podhost/podhost/internal/model/podstate"
	"github.com/podhost/podhost/internal/model/wellknown"
)

func resources(cpu, mem string) corev1.ResourceRequirements {
	l := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
	return corev1.ResourceRequirements{Requests: l.DeepCopy(), Limits: l}
}

// TestComputePodActionsResize: a running container made from another
// version of the pod whose spec differs only in resources is resized in
// place (or restarted per resizePolicy); anything else still restarts it.
func TestComputePodActionsResize(t *testing.T) {
	restartMem := []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.RestartContainer}}
	tests := []struct {
		name        string
		want        corev1.ResourceRequirements // the pod's (allocated) resources
		policy      []corev1.ContainerResizePolicy
		actuated    *corev1.ResourceRequirements // label; nil: none (older container)
		otherSpec   bool                         // the identity label differs
		wantResize  []string
		wantRestart bool
	}{
		{name: "unchanged: nothing", want: resources("200m", "64Mi"), actuated: ptrTo(resources("200m", "64Mi"))},
		{name: "cpu and memory up: update live", want: resources("500m", "128Mi"), actuated: ptrTo(resources("200m", "64Mi")),
			wantResize: []string{"a"}},
		{name: "memory changed, policy RestartContainer for memory: restart", want: resources("200m", "128Mi"),
			policy: restartMem, actuated: ptrTo(resources("200m", "64Mi")), wantRestart: true},
		{name: "cpu changed, policy RestartContainer for memory only: update live", want: resources("500m", "64Mi"),
			policy: restartMem, actuated: ptrTo(resources("200m", "64Mi")), wantResize: []string{"a"}},
		{name: "other spec change: restart", want: resources("500m", "128Mi"), actuated: ptrTo(resources("200m", "64Mi")),
			otherSpec: true, wantRestart: true},
		{name: "container without the labels: restart on a hash change", want: resources("500m", "128Mi"), wantRestart: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := testPod(corev1.RestartPolicyAlways, nil, "a")
			pod.Annotations[wellknown.AnnotationConfigHash] = "h2"    // the manifest changed
			pod.Annotations[wellknown.AnnotationIdentityHash] = "id1" // ...in its resources only
			pod.Spec.Containers[0].Resources, pod.Spec.Containers[0].ResizePolicy = tt.want, tt.policy
			c := ctr("a", podstate.StateRunning, 0) // made from version h1
			c.Labels = map[string]string{}
			if tt.actuated != nil {
				c.Labels[wellknown.LabelResources] = resize.Label(*tt.actuated)
				c.Labels[wellknown.LabelIdentityHash] = manifest.Identity(pod)
			}
			if tt.otherSpec {
				c.Labels[wellknown.LabelIdentityHash] = "other"
			}
			obs := observation{Running: &podstate.Pod{Containers: []*podstate.Container{c}}, SandboxID: "sb1", SandboxReady: true}
			a := computePodActions(pod, obs)
			var resized []string
			for _, r := range a.Resize {
				resized = append(resized, r.Spec.Name)
			}
			if !slices.Equal(resized, tt.wantResize) {
				t.Errorf("Resize = %v, want %v", resized, tt.wantResize)
			}
			restarted := len(a.Kill) == 1 && slices.Equal(names(a.Start), []string{"a"})
			if restarted != tt.wantRestart || (!tt.wantRestart && len(a.Kill)+len(a.Start) > 0) {
				t.Errorf("Kill=%d Start=%v, want restart=%v", len(a.Kill), names(a.Start), tt.wantRestart)
			}
		})
	}
}

func ptrTo[T any](v T) *T { return &v }
