package manifest

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Security contexts: what podhost applies as the kubelet and containerd's
// CRI plugin do, and refusals for what it cannot (docs/fields.md).

var (
	seccompTypes  = []corev1.SeccompProfileType{corev1.SeccompProfileTypeRuntimeDefault, corev1.SeccompProfileTypeUnconfined, corev1.SeccompProfileTypeLocalhost}
	apparmorTypes = []corev1.AppArmorProfileType{corev1.AppArmorProfileTypeRuntimeDefault, corev1.AppArmorProfileTypeUnconfined, corev1.AppArmorProfileTypeLocalhost}
)

func validatePodSecurityContext(s *corev1.PodSpec, p *field.Path) field.ErrorList {
	ps := s.SecurityContext
	if ps == nil {
		return nil
	}
	var all field.ErrorList
	all = append(all, refuseLinuxExtras(ps.SELinuxOptions, ps.WindowsOptions, p)...)
	if ps.SELinuxChangePolicy != nil {
		all = append(all, forbidden(p.Child("seLinuxChangePolicy"), "seLinuxChangePolicy (SELinux) is"))
	}
	for i, sc := range ps.Sysctls {
		all = append(all, validateSysctl(s, sc, p.Child("sysctls").Index(i))...)
	}
	all = append(all, validateSeccomp(ps.SeccompProfile, p.Child("seccompProfile"))...)
	all = append(all, validateAppArmor(ps.AppArmorProfile, p.Child("appArmorProfile"))...)
	return all
}

func validateSecurityContext(sc *corev1.SecurityContext, p *field.Path) field.ErrorList {
	if sc == nil {
		return nil
	}
	var all field.ErrorList
	if sc.Privileged != nil && *sc.Privileged && sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation {
		all = append(all, field.Invalid(p, "", "cannot set `allowPrivilegeEscalation` to false and `privileged` to true"))
	}
	if sc.ProcMount != nil {
		switch *sc.ProcMount {
		case corev1.DefaultProcMount:
		case corev1.UnmaskedProcMount: // the kubelet allows it with hostUsers: false; podhost does not mount an unmasked /proc
			all = append(all, unsupported(p.Child("procMount"), string(*sc.ProcMount), "supported: Default"))
		default:
			all = append(all, field.NotSupported(p.Child("procMount"), *sc.ProcMount, []corev1.ProcMountType{corev1.DefaultProcMount}))
		}
	}
	for _, id := range []struct {
		name  string
		value *int64
	}{{"runAsUser", sc.RunAsUser}, {"runAsGroup", sc.RunAsGroup}} {
		if id.value != nil && (*id.value < 0 || *id.value > 1<<31-1) {
			all = append(all, field.Invalid(p.Child(id.name), *id.value, validation.InclusiveRangeError(0, 1<<31-1)))
		}
	}
	all = append(all, refuseLinuxExtras(sc.SELinuxOptions, sc.WindowsOptions, p)...)
	all = append(all, validateCapabilities(sc.Capabilities, p.Child("capabilities"))...)
	all = append(all, validateSeccomp(sc.SeccompProfile, p.Child("seccompProfile"))...)
	all = append(all, validateAppArmor(sc.AppArmorProfile, p.Child("appArmorProfile"))...)
	return all
}

// validateCapabilities refuses names with the CAP_ prefix (any case):
// containerd's CRI plugin prepends CAP_ to every name (WithCapabilities),
// and runc ignores the unknown CAP_CAP_X, so under the kubelet such an add
// or drop silently does nothing.
func validateCapabilities(caps *corev1.Capabilities, p *field.Path) field.ErrorList {
	if caps == nil {
		return nil
	}
	var all field.ErrorList
	for _, list := range []struct {
		name  string
		names []corev1.Capability
	}{{"add", caps.Add}, {"drop", caps.Drop}} {
		for i, c := range list.names {
			if strings.HasPrefix(strings.ToUpper(string(c)), "CAP_") {
				all = append(all, field.Invalid(p.Child(list.name).Index(i), string(c),
					"capability names have no CAP_ prefix (the kubelet would ignore it)"))
			}
		}
	}
	return all
}

// refuseLinuxExtras: podhost runs no SELinux labelling and only Linux.
func refuseLinuxExtras(se *corev1.SELinuxOptions, win *corev1.WindowsSecurityContextOptions, p *field.Path) field.ErrorList {
	var all field.ErrorList
	if se != nil {
		all = append(all, forbidden(p.Child("seLinuxOptions"), "seLinuxOptions (SELinux labels) are"))
	}
	if win != nil {
		all = append(all, forbidden(p.Child("windowsOptions"), "windowsOptions are"))
	}
	return all
}

// validateSysctl accepts namespaced sysctls only (net.*, and the IPC ones:
// kernel.shm*, kernel.msg*, kernel.sem, fs.mqueue.*), which covers the
// kubelet's safe list, and only when the pod does not share that namespace
// with the host: a sysctl there would change the host.
func validateSysctl(s *corev1.PodSpec, sc corev1.Sysctl, p *field.Path) field.ErrorList {
	name := SysctlName(sc.Name)
	switch ns := SysctlNamespace(name); {
	case sc.Name == "":
		return field.ErrorList{field.Required(p.Child("name"), "")}
	case ns == "":
		return field.ErrorList{unsupported(p.Child("name"), sc.Name, "not a namespaced sysctl: it would change the host")}
	case ns == "net" && s.HostNetwork:
		return field.ErrorList{unsupported(p.Child("name"), sc.Name, "a net.* sysctl with hostNetwork would change the host")}
	case ns == "ipc" && s.HostIPC:
		return field.ErrorList{unsupported(p.Child("name"), sc.Name, "an IPC sysctl with hostIPC would change the host")}
	}
	return nil
}

// SysctlName converts the slash form (net/ipv4/ip_forward) to the dotted
// one, swapping '/' and '.' as Kubernetes does.
func SysctlName(name string) string {
	if i := strings.IndexAny(name, "./"); i < 0 || name[i] == '.' {
		return name
	}
	return strings.Map(func(r rune) rune {
		switch r {
		case '.':
			return '/'
		case '/':
			return '.'
		}
		return r
	}, name)
}

// SysctlNamespace is the namespace a sysctl belongs to ("net", "ipc"), ""
// for a host-wide one (the kubelet's namespacedSysctls).
func SysctlNamespace(name string) string {
	switch {
	case strings.HasPrefix(name, "net."):
		return "net"
	case strings.HasPrefix(name, "kernel.shm"), strings.HasPrefix(name, "kernel.msg"),
		name == "kernel.sem", strings.HasPrefix(name, "fs.mqueue."):
		return "ipc"
	}
	return ""
}

func validateSeccomp(sp *corev1.SeccompProfile, p *field.Path) field.ErrorList {
	if sp == nil {
		return nil
	}
	return validateProfile(string(sp.Type), sp.LocalhostProfile, sp.Type == corev1.SeccompProfileTypeLocalhost, seccompTypes, p)
}

// validateAppArmorAnnotations checks the deprecated per-container AppArmor
// annotations as the API server does (ValidateAppArmorPodAnnotations and,
// on create, ValidateAppArmorAnnotationsAndFieldsMatchOnCreate): a known
// container, a profile the kubelet can read, and no disagreement with the
// appArmorProfile field (the container's, else the pod's). The kubelet honours them for static
// pods (AppArmorFromAnnotation).
func validateAppArmorAnnotations(pod *corev1.Pod, p *field.Path) field.ErrorList {
	var all field.ErrorList
	var podProfile *corev1.AppArmorProfile
	if ps := pod.Spec.SecurityContext; ps != nil {
		podProfile = ps.AppArmorProfile
	}
	for _, k := range slices.Sorted(maps.Keys(pod.Annotations)) {
		name, ok := strings.CutPrefix(k, corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix)
		if !ok {
			continue
		}
		v := pod.Annotations[k]
		c := FindContainer(&pod.Spec, name)
		if c == nil {
			all = append(all, field.Invalid(p.Key(k), name, "container not found"))
		}
		prof, ok := AppArmorFromAnnotation(v)
		if !ok {
			all = append(all, field.Invalid(p.Key(k), v, fmt.Sprintf("invalid AppArmor profile name: %q", v)))
			continue
		}
		if c == nil || prof == nil {
			continue
		}
		f := podProfile // the container's field, else the pod's, as the API server compares
		if c.SecurityContext != nil && c.SecurityContext.AppArmorProfile != nil {
			f = c.SecurityContext.AppArmorProfile
		}
		if f != nil && (f.Type != prof.Type || deref(f.LocalhostProfile) != deref(prof.LocalhostProfile)) {
			all = append(all, field.Forbidden(p.Key(k), "apparmor type in annotation and field must match"))
		}
	}
	return all
}

// AppArmorFromAnnotation reads a container.apparmor.security.beta.kubernetes.io
// annotation's value as the kubelet does (getProfileFromPodAnnotations):
// runtime/default, unconfined or localhost/<profile>; "" is no profile.
// ok is false for any other value, which the API server refuses.
func AppArmorFromAnnotation(v string) (prof *corev1.AppArmorProfile, ok bool) {
	switch {
	case v == "":
		return nil, true
	case v == corev1.DeprecatedAppArmorBetaProfileRuntimeDefault:
		return &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeRuntimeDefault}, true
	case v == corev1.DeprecatedAppArmorBetaProfileNameUnconfined:
		return &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}, true
	case strings.HasPrefix(v, corev1.DeprecatedAppArmorBetaProfileNamePrefix):
		name := strings.TrimPrefix(v, corev1.DeprecatedAppArmorBetaProfileNamePrefix)
		return &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeLocalhost, LocalhostProfile: &name}, true
	}
	return nil, false
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// FindContainer returns the init or app container called name (names are
// unique across both lists), nil if none.
func FindContainer(s *corev1.PodSpec, name string) *corev1.Container {
	for _, cs := range [][]corev1.Container{s.InitContainers, s.Containers} {
		for i := range cs {
			if cs[i].Name == name {
				return &cs[i]
			}
		}
	}
	return nil
}

func validateAppArmor(ap *corev1.AppArmorProfile, p *field.Path) field.ErrorList {
	if ap == nil {
		return nil
	}
	return validateProfile(string(ap.Type), ap.LocalhostProfile, ap.Type == corev1.AppArmorProfileTypeLocalhost, apparmorTypes, p)
}

// validateProfile checks a seccomp or AppArmor profile as ValidatePod does:
// localhostProfile is required with type Localhost and forbidden otherwise,
// and (seccomp) a relative path without "..".
func validateProfile[T ~string](typ string, localhost *string, isLocalhost bool, types []T, p *field.Path) field.ErrorList {
	known := false
	for _, t := range types {
		known = known || string(t) == typ
	}
	switch {
	case !known:
		return field.ErrorList{field.NotSupported(p.Child("type"), typ, types)}
	case isLocalhost && (localhost == nil || *localhost == ""):
		return field.ErrorList{field.Required(p.Child("localhostProfile"), "must be set when type is Localhost")}
	case !isLocalhost && localhost != nil:
		return field.ErrorList{field.Invalid(p.Child("localhostProfile"), *localhost, "can only be set when type is Localhost")}
	case isLocalhost:
		return validateRelPath(p.Child("localhostProfile"), *localhost)
	}
	return nil
}
