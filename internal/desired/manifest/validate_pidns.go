package manifest

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateShareProcessNamespace checks shareProcessNamespace: true as the
// API server does (not with hostPID), and refuses what podhost cannot
// make: a shared PID namespace owned by the pod's user namespace (its
// PID 1 is started outside every container, in the host's user
// namespace, which runc in the pod's could not join).
func validateShareProcessNamespace(s *corev1.PodSpec, p *field.Path) field.ErrorList {
	if s.ShareProcessNamespace == nil || !*s.ShareProcessNamespace {
		return nil
	}
	fp := p.Child("shareProcessNamespace")
	if s.HostPID {
		return field.ErrorList{field.Invalid(fp, true, "ShareProcessNamespace and HostPID cannot both be enabled")}
	}
	if s.HostUsers != nil && !*s.HostUsers {
		return field.ErrorList{forbidden(fp, "a shared PID namespace in a pod with hostUsers: false is")}
	}
	return nil
}
