package spec

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Hostname returns the pod's hostname as the kubelet computes it:
// spec.hostnameOverride, else spec.hostname, else the pod name, cut to 63
// characters without a trailing '-' or '.'. hostNetwork pods use the host's
// hostname instead (HostLimits.Hostname).
func Hostname(pod *corev1.Pod) string {
	name := pod.Name
	switch {
	case pod.Spec.HostnameOverride != nil && *pod.Spec.HostnameOverride != "":
		name = *pod.Spec.HostnameOverride
	case pod.Spec.Hostname != "":
		name = pod.Spec.Hostname
	}
	const maxLen = 63
	if len(name) > maxLen {
		name = strings.TrimRight(name[:maxLen], "-.")
	}
	return name
}
