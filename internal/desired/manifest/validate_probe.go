package manifest

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var (
	uriSchemes = []corev1.URIScheme{corev1.URISchemeHTTP, corev1.URISchemeHTTPS}
)

// validateProbes checks the probes and lifecycle hooks of a container.
// Regular init containers (init: not sidecars) may have neither probes nor
// lifecycle hooks; sidecars may have both.
func validateProbes(c *corev1.Container, p *field.Path, init bool) field.ErrorList {
	var all field.ErrorList
	probes := []struct {
		name           string
		probe          *corev1.Probe
		succeedOnlyOne bool
	}{
		{"livenessProbe", c.LivenessProbe, true},
		{"readinessProbe", c.ReadinessProbe, false},
		{"startupProbe", c.StartupProbe, true},
	}
	for _, pr := range probes {
		if pr.probe == nil {
			continue
		}
		if init {
			all = append(all, field.Forbidden(p.Child(pr.name), "may not be set for init containers without restartPolicy=Always"))
			continue
		}
		all = append(all, validateProbe(c, pr.probe, p.Child(pr.name), pr.succeedOnlyOne)...)
	}
	if c.Lifecycle == nil {
		return all
	}
	if init { // a sidecar (restartPolicy Always) may have hooks: the kubelet runs them
		return append(all, field.Forbidden(p.Child("lifecycle"), "may not be set for init containers without restartPolicy=Always"))
	}
	if h := c.Lifecycle.PostStart; h != nil {
		all = append(all, validateLifecycleHandler(c, h, p.Child("lifecycle", "postStart"))...)
	}
	if h := c.Lifecycle.PreStop; h != nil {
		all = append(all, validateLifecycleHandler(c, h, p.Child("lifecycle", "preStop"))...)
	}
	return all
}

func validateProbe(c *corev1.Container, pr *corev1.Probe, p *field.Path, succeedOnlyOnce bool) field.ErrorList {
	all := validateHandler(c, &pr.ProbeHandler, p)
	nonNegative := []struct {
		name  string
		value int32
		min   int32
	}{
		{"initialDelaySeconds", pr.InitialDelaySeconds, 0},
		{"timeoutSeconds", pr.TimeoutSeconds, 1},
		{"periodSeconds", pr.PeriodSeconds, 1},
		{"successThreshold", pr.SuccessThreshold, 1},
		{"failureThreshold", pr.FailureThreshold, 1},
	}
	for _, f := range nonNegative {
		if f.value < f.min {
			msg := "must be greater than or equal to 0"
			if f.min == 1 {
				msg = "must be greater than or equal to 1"
			}
			all = append(all, field.Invalid(p.Child(f.name), f.value, msg))
		}
	}
	if succeedOnlyOnce && pr.SuccessThreshold != 1 && pr.SuccessThreshold >= 1 {
		all = append(all, field.Invalid(p.Child("successThreshold"), pr.SuccessThreshold, "must be 1"))
	}
	if g := pr.TerminationGracePeriodSeconds; g != nil && *g <= 0 {
		all = append(all, field.Invalid(p.Child("terminationGracePeriodSeconds"), *g, "must be greater than 0"))
	}
	return all
}

// validateHandler checks that exactly one probe handler is set, and it.
func validateHandler(c *corev1.Container, h *corev1.ProbeHandler, p *field.Path) field.ErrorList {
	all := exactlyOneHandler(setFields(h), p)
	if h.Exec != nil && len(h.Exec.Command) == 0 {
		all = append(all, field.Required(p.Child("exec", "command"), ""))
	}
	if h.HTTPGet != nil {
		all = append(all, validateHTTPGet(c, h.HTTPGet, p.Child("httpGet"))...)
	}
	if h.TCPSocket != nil {
		all = append(all, validatePortRef(c, h.TCPSocket.Port, p.Child("tcpSocket", "port"))...)
	}
	if h.GRPC != nil {
		for _, msg := range validation.IsValidPortNum(int(h.GRPC.Port)) {
			all = append(all, field.Invalid(p.Child("grpc", "port"), h.GRPC.Port, msg))
		}
	}
	return all
}

func validateLifecycleHandler(c *corev1.Container, h *corev1.LifecycleHandler, p *field.Path) field.ErrorList {
	all := exactlyOneHandler(setFields(h), p)
	if h.Exec != nil && len(h.Exec.Command) == 0 {
		all = append(all, field.Required(p.Child("exec", "command"), ""))
	}
	if h.HTTPGet != nil {
		all = append(all, validateHTTPGet(c, h.HTTPGet, p.Child("httpGet"))...)
	}
	if h.TCPSocket != nil {
		// Kubernetes keeps the field for compatibility; the kubelet fails it
		// at runtime ("invalid handler"). podhost refuses it up front.
		all = append(all, field.Forbidden(p.Child("tcpSocket"), "not supported by podhost in a lifecycle hook (the kubelet cannot run it): use exec, httpGet or sleep"))
	}
	if h.Sleep != nil && h.Sleep.Seconds < 0 {
		all = append(all, field.Invalid(p.Child("sleep", "seconds"), h.Sleep.Seconds, "must be greater than or equal to 0"))
	}
	return all
}

func exactlyOneHandler(set []string, p *field.Path) field.ErrorList {
	switch len(set) {
	case 0:
		return field.ErrorList{field.Required(p, "must specify a handler type")}
	case 1:
		return nil
	default:
		return field.ErrorList{field.Forbidden(p.Child(set[1]), "may not specify more than 1 handler type")}
	}
}

func validateHTTPGet(c *corev1.Container, h *corev1.HTTPGetAction, p *field.Path) field.ErrorList {
	all := validatePortRef(c, h.Port, p.Child("port"))
	if !slices.Contains(uriSchemes, h.Scheme) {
		all = append(all, field.NotSupported(p.Child("scheme"), h.Scheme, uriSchemes))
	}
	for i, hdr := range h.HTTPHeaders {
		for _, msg := range validation.IsHTTPHeaderName(hdr.Name) {
			all = append(all, field.Invalid(p.Child("httpHeaders").Index(i).Child("name"), hdr.Name, msg))
		}
	}
	return all
}

// validatePortRef checks a probe's port: a number, or the name of one of
// the container's ports (Kubernetes only checks the name's syntax; a name
// that matches no port could never be probed, so podhost rejects it).
func validatePortRef(c *corev1.Container, port intstr.IntOrString, p *field.Path) field.ErrorList {
	if port.Type == intstr.Int {
		var all field.ErrorList
		for _, msg := range validation.IsValidPortNum(int(intOrStringPort(port))) {
			all = append(all, field.Invalid(p, port.IntVal, msg))
		}
		return all
	}
	if msgs := validation.IsValidPortName(port.StrVal); len(msgs) > 0 {
		var all field.ErrorList
		for _, msg := range msgs {
			all = append(all, field.Invalid(p, port.StrVal, msg))
		}
		return all
	}
	for _, cp := range c.Ports {
		if cp.Name == port.StrVal {
			return nil
		}
	}
	return field.ErrorList{field.NotFound(p, port.StrVal)}
}
