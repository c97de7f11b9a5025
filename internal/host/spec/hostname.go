package spec

import (
	"fmt"
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

// Domain is the pod's domain as the kubelet's GeneratePodHostNameAndDomain
// builds it: "<subdomain>.<namespace>.svc.<clusterDomain>" when
// spec.subdomain is set, else "". The kubelet does not check for an empty
// cluster domain: then the domain ends in "svc.".
func Domain(pod *corev1.Pod, clusterDomain string) string {
	if pod.Spec.Subdomain == "" {
		return ""
	}
	return fmt.Sprintf("%s.%s.svc.%s", pod.Spec.Subdomain, pod.Namespace, clusterDomain)
}

// maxKernelHostname is the Linux nodename field (65 bytes with the NUL),
// the kubelet's fqdnMaxLen.
const maxKernelHostname = 64

// KernelHostname is the kubelet's GetNodenameForKernel: the pod's
// hostname, or with setHostnameAsFQDN and a domain "<hostname>.<domain>",
// an error when that is over 64 characters (the kubelet then fails the
// sandbox). It is the UTS hostname, /etc/hostname and HOSTNAME of a pod
// with its own network namespace.
func KernelHostname(pod *corev1.Pod, clusterDomain string) (string, error) {
	hostname, domain := Hostname(pod), Domain(pod, clusterDomain)
	if domain == "" || pod.Spec.SetHostnameAsFQDN == nil || !*pod.Spec.SetHostnameAsFQDN {
		return hostname, nil
	}
	fqdn := hostname + "." + domain
	if len(fqdn) > maxKernelHostname {
		return "", fmt.Errorf("failed to construct FQDN from pod hostname and cluster domain, FQDN %s is too long (%d characters is the max, %d characters requested)",
			fqdn, maxKernelHostname, len(fqdn))
	}
	return fqdn, nil
}
