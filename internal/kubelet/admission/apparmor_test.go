package admission

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestAdmitAppArmor: the kubelet's AppArmor admission rejects a pod that
// asks for a profile (field or annotation, other than Unconfined) on a
// host without AppArmor, and admits everything where it is enabled.
func TestAdmitAppArmor(t *testing.T) {
	prof := func(typ corev1.AppArmorProfileType) *corev1.AppArmorProfile {
		return &corev1.AppArmorProfile{Type: typ}
	}
	tests := []struct {
		name   string
		mutate func(*corev1.Pod)
		asks   bool
	}{
		{"nothing asked", func(*corev1.Pod) {}, false},
		{"pod RuntimeDefault", func(p *corev1.Pod) {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{AppArmorProfile: prof(corev1.AppArmorProfileTypeRuntimeDefault)}
		}, true},
		{"pod Unconfined", func(p *corev1.Pod) {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{AppArmorProfile: prof(corev1.AppArmorProfileTypeUnconfined)}
		}, false},
		{"init container Localhost", func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "i", SecurityContext: &corev1.SecurityContext{AppArmorProfile: prof(corev1.AppArmorProfileTypeLocalhost)}}}
		}, true},
		{"annotation localhost", func(p *corev1.Pod) {
			p.Annotations = map[string]string{corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix + "c": "localhost/x"}
		}, true},
		{"annotation unconfined", func(p *corev1.Pod) {
			p.Annotations = map[string]string{corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix + "c": "unconfined"}
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}}}
			tt.mutate(p)
			node := Node{Name: "n", Allocatable: corev1.ResourceList{}}
			if r := node.Admit(p, nil); r.Admit == tt.asks || (!r.Admit && (r.Reason != ReasonAppArmor || r.Message != MessageAppArmor)) {
				t.Errorf("without AppArmor: %+v, want admitted %v", r, !tt.asks)
			}
			node.AppArmor = true
			if r := node.Admit(p, nil); !r.Admit {
				t.Errorf("with AppArmor: %+v", r)
			}
		})
	}
}
