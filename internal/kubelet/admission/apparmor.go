package admission

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// The kubelet's AppArmor admission (pkg/kubelet/lifecycle's
// appArmorAdmitHandler, apparmor.Validator): a pod that asks for a profile
// is rejected on a host without AppArmor.
const (
	ReasonAppArmor  = "AppArmor" // the kubelet's AppArmorNotAdmittedReason
	MessageAppArmor = "Cannot enforce AppArmor: AppArmor is not enabled on the host"
)

// admitAppArmor rejects pod when it asks for AppArmor and the host has none.
func admitAppArmor(pod *corev1.Pod, enabled bool) Result {
	if enabled || !appArmorRequired(pod) {
		return Result{Admit: true}
	}
	return Result{Reason: ReasonAppArmor, Message: MessageAppArmor}
}

// appArmorRequired is the kubelet's apparmor isRequired: a profile other
// than Unconfined in the pod's or any container's field, or any deprecated
// per-container annotation other than "unconfined" (the kubelet looks at
// the first it meets in map order; every one here).
func appArmorRequired(pod *corev1.Pod) bool {
	asks := func(p *corev1.AppArmorProfile) bool {
		return p != nil && p.Type != corev1.AppArmorProfileTypeUnconfined
	}
	if ps := pod.Spec.SecurityContext; ps != nil && asks(ps.AppArmorProfile) {
		return true
	}
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			if sc := cs[i].SecurityContext; sc != nil && asks(sc.AppArmorProfile) {
				return true
			}
		}
	}
	for k, v := range pod.Annotations {
		if strings.HasPrefix(k, corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix) && v != corev1.DeprecatedAppArmorBetaProfileNameUnconfined {
			return true
		}
	}
	return false
}
