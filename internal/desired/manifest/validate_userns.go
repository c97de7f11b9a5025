package manifest

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// userNSIDs is how many ids a pod's user namespace maps (the kubelet's
// idsPerPod, internal/kubelet/userns.IDsPerPod): 0..65535.
const userNSIDs = 1 << 16

// validateHostUsers checks a pod with hostUsers: false: the API server's
// validateHostUsers (no host network, PID or IPC namespace with it), and
// what podhost's user namespaces cannot honour: an id beyond the 65536 the
// pod's namespace maps (runc would fail every start), and mount
// propagation from or to the host (the volumes are idmapped copies of the
// host's mounts, which propagation does not follow).
func validateHostUsers(s *corev1.PodSpec, p *field.Path) field.ErrorList {
	if s.HostUsers == nil || *s.HostUsers {
		return nil
	}
	var all field.ErrorList
	for _, h := range []struct {
		name string
		set  bool
	}{{"hostNetwork", s.HostNetwork}, {"hostPID", s.HostPID}, {"hostIPC", s.HostIPC}} {
		if h.set {
			all = append(all, field.Forbidden(p.Child(h.name), "when `hostUsers` is false"))
		}
	}
	if sc := s.SecurityContext; sc != nil {
		sp := p.Child("securityContext")
		all = append(all, checkMappedID(sp.Child("runAsUser"), sc.RunAsUser)...)
		all = append(all, checkMappedID(sp.Child("runAsGroup"), sc.RunAsGroup)...)
		all = append(all, checkMappedID(sp.Child("fsGroup"), sc.FSGroup)...)
		for i := range sc.SupplementalGroups {
			all = append(all, checkMappedID(sp.Child("supplementalGroups").Index(i), &sc.SupplementalGroups[i])...)
		}
	}
	for _, list := range []struct {
		name string
		cs   []corev1.Container
	}{{"initContainers", s.InitContainers}, {"containers", s.Containers}} {
		for i := range list.cs {
			all = append(all, userNSContainer(&list.cs[i], p.Child(list.name).Index(i))...)
		}
	}
	return all
}

func userNSContainer(c *corev1.Container, p *field.Path) field.ErrorList {
	var all field.ErrorList
	if sc := c.SecurityContext; sc != nil {
		all = append(all, checkMappedID(p.Child("securityContext", "runAsUser"), sc.RunAsUser)...)
		all = append(all, checkMappedID(p.Child("securityContext", "runAsGroup"), sc.RunAsGroup)...)
	}
	for j, vm := range c.VolumeMounts {
		if vm.MountPropagation != nil && *vm.MountPropagation != corev1.MountPropagationNone {
			all = append(all, unsupported(p.Child("volumeMounts").Index(j).Child("mountPropagation"), string(*vm.MountPropagation),
				"a pod with hostUsers: false gets idmapped copies of its volumes, which do not propagate mounts; supported: None"))
		}
	}
	return all
}

// checkMappedID refuses an id the pod's user namespace does not map.
func checkMappedID(p *field.Path, id *int64) field.ErrorList {
	if id == nil || *id < userNSIDs {
		return nil
	}
	return field.ErrorList{field.Invalid(p, *id, fmt.Sprintf("must be less than %d when `hostUsers` is false: the pod's user namespace maps ids 0-%d", userNSIDs, userNSIDs-1))}
}
