package manifest

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/distribution/reference"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var (
	pullPolicies       = []corev1.PullPolicy{corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever}
	protocols          = []corev1.Protocol{corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP}
	terminationMsgPols = []corev1.TerminationMessagePolicy{corev1.TerminationMessageReadFile, corev1.TerminationMessageFallbackToLogsOnError}
)

// podContext is what container validation needs to know about the pod.
type podContext struct {
	volumes     sets.Set[string]
	containers  sets.Set[string] // every container name, init containers included
	hostNetwork bool
}

func validateContainers(s *corev1.PodSpec, volumes sets.Set[string], p *field.Path) field.ErrorList {
	var all field.ErrorList
	if len(s.Containers) == 0 {
		all = append(all, field.Required(p.Child("containers"), "a pod needs at least one container"))
	}
	ctx := podContext{volumes: volumes, containers: sets.New[string](), hostNetwork: s.HostNetwork}
	for _, list := range [][]corev1.Container{s.InitContainers, s.Containers} {
		for i := range list {
			ctx.containers.Insert(list[i].Name)
		}
	}
	seen := sets.New[string]()
	check := func(list []corev1.Container, lp *field.Path, init bool) {
		for i := range list {
			c := &list[i]
			cp := lp.Index(i)
			if c.Name != "" && seen.Has(c.Name) {
				all = append(all, field.Duplicate(cp.Child("name"), c.Name))
			}
			seen.Insert(c.Name)
			all = append(all, validateContainer(c, &ctx, cp, init)...)
		}
	}
	check(s.InitContainers, p.Child("initContainers"), true)
	check(s.Containers, p.Child("containers"), false)
	// Regular containers run together and share the pod's host ports; init
	// containers run one at a time, so each only has to be consistent
	// with itself (as in Kubernetes).
	all = append(all, checkHostPorts(s.Containers, p.Child("containers"), 0)...)
	for i := range s.InitContainers {
		all = append(all, checkHostPorts(s.InitContainers[i:i+1], p.Child("initContainers"), i)...)
	}
	return all
}

func validateContainer(c *corev1.Container, ctx *podContext, p *field.Path, init bool) field.ErrorList {
	var all field.ErrorList
	if c.Name == "" {
		all = append(all, field.Required(p.Child("name"), ""))
	} else {
		for _, msg := range validation.IsDNS1123Label(c.Name) {
			all = append(all, field.Invalid(p.Child("name"), c.Name, msg))
		}
	}
	all = append(all, validateImage(c, p)...)
	if c.WorkingDir != "" && !strings.HasPrefix(c.WorkingDir, "/") {
		all = append(all, field.Invalid(p.Child("workingDir"), c.WorkingDir, "must be an absolute path"))
	}
	if !slices.Contains(terminationMsgPols, c.TerminationMessagePolicy) {
		all = append(all, field.NotSupported(p.Child("terminationMessagePolicy"), c.TerminationMessagePolicy, terminationMsgPols))
	}
	all = append(all, validatePorts(c.Ports, p.Child("ports"), ctx.hostNetwork)...)
	all = append(all, validateEnv(c, ctx, p)...)
	all = append(all, validateResources(&c.Resources, p.Child("resources"))...)
	all = append(all, validateMounts(c, ctx.volumes, p)...)
	all = append(all, validateProbes(c, p, init && !isSidecar(c))...)
	all = append(all, validateSecurityContext(c.SecurityContext, p.Child("securityContext"))...)
	all = append(all, validateContainerRestartPolicy(c, p.Child("restartPolicy"), init)...)
	if len(c.RestartPolicyRules) > 0 {
		all = append(all, forbidden(p.Child("restartPolicyRules"), "restartPolicyRules are"))
	}
	if c.Stdin && !c.TTY { // the shim gives a process whose output goes to a log binary no stdin
		all = append(all, forbidden(p.Child("stdin"), "stdin without tty is"))
	}
	if c.StdinOnce { // the end of an attach is not seen yet: stdin would stay open
		all = append(all, forbidden(p.Child("stdinOnce"), "stdinOnce (closing stdin when the first attach ends) is"))
	}
	return all
}

func validateImage(c *corev1.Container, p *field.Path) field.ErrorList {
	ip := p.Child("image")
	switch {
	case c.Image == "":
		return field.ErrorList{field.Required(ip, "")}
	case strings.TrimSpace(c.Image) != c.Image:
		return field.ErrorList{field.Invalid(ip, c.Image, "must not have leading or trailing whitespace")}
	}
	var all field.ErrorList
	if _, err := reference.ParseNormalizedNamed(c.Image); err != nil {
		all = append(all, field.Invalid(ip, c.Image, err.Error()))
	}
	if !slices.Contains(pullPolicies, c.ImagePullPolicy) {
		all = append(all, field.NotSupported(p.Child("imagePullPolicy"), c.ImagePullPolicy, pullPolicies))
	}
	return all
}

func validatePorts(ports []corev1.ContainerPort, p *field.Path, hostNetwork bool) field.ErrorList {
	var all field.ErrorList
	names := sets.New[string]()
	for i, port := range ports {
		pp := p.Index(i)
		if port.Name != "" {
			for _, msg := range validation.IsValidPortName(port.Name) {
				all = append(all, field.Invalid(pp.Child("name"), port.Name, msg))
			}
			if names.Has(port.Name) {
				all = append(all, field.Duplicate(pp.Child("name"), port.Name))
			}
			names.Insert(port.Name)
		}
		if port.ContainerPort == 0 {
			all = append(all, field.Required(pp.Child("containerPort"), ""))
		} else {
			for _, msg := range validation.IsValidPortNum(int(port.ContainerPort)) {
				all = append(all, field.Invalid(pp.Child("containerPort"), port.ContainerPort, msg))
			}
		}
		if port.HostPort != 0 {
			for _, msg := range validation.IsValidPortNum(int(port.HostPort)) {
				all = append(all, field.Invalid(pp.Child("hostPort"), port.HostPort, msg))
			}
		}
		if hostNetwork && port.HostPort != port.ContainerPort {
			all = append(all, field.Invalid(pp.Child("containerPort"), port.ContainerPort, "must match `hostPort` when `hostNetwork` is true"))
		}
		if !slices.Contains(protocols, port.Protocol) {
			all = append(all, field.NotSupported(pp.Child("protocol"), port.Protocol, protocols))
		}
		if port.HostIP != "" {
			if _, err := netip.ParseAddr(port.HostIP); err != nil {
				all = append(all, field.Invalid(pp.Child("hostIP"), port.HostIP, "must be a valid IP address"))
			}
		}
	}
	return all
}

// checkHostPorts is the API's AccumulateUniqueHostPorts: two ports of
// containers with the same "<protocol>/<hostIP>/<hostPort>" are a
// duplicate; a wildcard host IP is only a string there (two ports on ""
// and 10.0.0.1 pass validation; admission compares addresses). p is the
// path of the list containers were taken from, offset the index of
// containers[0] in it.
func checkHostPorts(containers []corev1.Container, p *field.Path, offset int) field.ErrorList {
	var all field.ErrorList
	seen := map[string]bool{}
	for ci := range containers {
		for pi, port := range containers[ci].Ports {
			if port.HostPort == 0 {
				continue
			}
			key := fmt.Sprintf("%s/%s/%d", port.Protocol, port.HostIP, port.HostPort)
			if seen[key] {
				fp := p.Index(offset + ci).Child("ports").Index(pi).Child("hostPort")
				all = append(all, field.Duplicate(fp, key))
				continue
			}
			seen[key] = true
		}
	}
	return all
}

// validateContainerRestartPolicy: only init containers may set it, and only
// to Always (a native sidecar); per-container restart rules of regular
// containers are not supported.
func validateContainerRestartPolicy(c *corev1.Container, p *field.Path, init bool) field.ErrorList {
	switch {
	case c.RestartPolicy == nil:
		return nil
	case !init:
		return field.ErrorList{forbidden(p, "a restartPolicy on a regular container (container restart rules) is")}
	case *c.RestartPolicy != corev1.ContainerRestartPolicyAlways:
		return field.ErrorList{field.NotSupported(p, *c.RestartPolicy, []corev1.ContainerRestartPolicy{corev1.ContainerRestartPolicyAlways})}
	}
	return nil
}

// isSidecar: an init container with restartPolicy Always.
func isSidecar(c *corev1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}
