package status

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/podhost/podhost/internal/kubelet/resize"
	"github.com/podhost/podhost/internal/model/podstate"
	"github.com/podhost/podhost/internal/model/wellknown"
)

func TestComputeResize(t *testing.T) {
	lim := func(mem string) corev1.ResourceRequirements {
		l := corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(mem)}
		return corev1.ResourceRequirements{Requests: l.DeepCopy(), Limits: l}
	}
	tests := []struct {
		name         string
		actuated     string // label of the running container; "" none
		pending      string // the pod's resize-pending annotation
		resizeErr    string
		wantPending  string                 // PodResizePending reason, "-" absent
		wantProgress string                 // PodResizeInProgress reason, "-" absent
		wantResize   corev1.PodResizeStatus //nolint:staticcheck // deprecated field, still set
		wantActuated string
	}{
		{name: "settled", actuated: resize.Label(lim("64Mi")), wantPending: "-", wantProgress: "-", wantActuated: "64Mi"},
		{name: "no label: actuated is the spec", wantPending: "-", wantProgress: "-", wantActuated: "64Mi"},
		{name: "allocated, not actuated yet", actuated: resize.Label(lim("32Mi")), wantPending: "-", wantProgress: "",
			wantResize: corev1.PodResizeStatusInProgress, wantActuated: "32Mi"},
		{name: "actuation failed", actuated: resize.Label(lim("32Mi")), resizeErr: "below usage", wantPending: "-",
			wantProgress: corev1.PodReasonError, wantResize: corev1.PodResizeStatusInProgress, wantActuated: "32Mi"},
		{name: "infeasible", actuated: resize.Label(lim("64Mi")), pending: "Infeasible: Node didn't have enough capacity",
			wantPending: corev1.PodReasonInfeasible, wantProgress: "-", wantResize: corev1.PodResizeStatusInfeasible, wantActuated: "64Mi"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := testPod(corev1.RestartPolicyAlways)
			pod.Spec.Containers[0].Resources = lim("64Mi")
			if tt.pending != "" {
				pod.Annotations = map[string]string{wellknown.AnnotationResizePending: tt.pending}
			}
			c := rc(pod.Spec.Containers[0].Name, 0, podstate.StateRunning, 0)
			c.Labels = map[string]string{}
			if tt.actuated != "" {
				c.Labels[wellknown.LabelResources] = tt.actuated
			}
			s := Compute(pod, ready(Inputs{Running: runtimePod(c), ResizeError: tt.resizeErr, Now: now}))
			for typ, want := range map[corev1.PodConditionType]string{corev1.PodResizePending: tt.wantPending, corev1.PodResizeInProgress: tt.wantProgress} {
				got := "-"
				if c := cond(s, typ); c.Type == typ {
					got = c.Reason
				}
				eq(t, string(typ), got, want)
			}
			eq(t, "status.resize", s.Resize, tt.wantResize) //nolint:staticcheck // deprecated field, still set
			cs := s.ContainerStatuses[0]
			eq(t, "actuated memory", cs.Resources.Limits.Memory().String(), tt.wantActuated)
			eq(t, "allocated memory", cs.AllocatedResources.Memory().String(), "64Mi")
		})
	}
}
