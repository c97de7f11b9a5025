package spec

import (
	"errors"

	"github.com/containerd/containerd/v2/pkg/oci"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// userNSOpts joins the pod's pinned user namespace with its mapping, as
// CRI's WithPodNamespaces does for a pod in NamespaceMode_POD: the
// namespace by path, and the mapping runc needs to know who is root.
func userNSOpts(p Pod) ([]oci.SpecOpts, error) {
	if p.UserNS == nil || p.UserNSPath == "" {
		return nil, errors.New("spec: hostUsers: false but the pod sandbox has no user namespace")
	}
	if p.IDMapped == nil {
		return nil, errors.New("spec: hostUsers: false but no idmapped mounts for the pod's volumes")
	}
	m := UserNSMappings(p.UserNS.HostID, p.UserNS.Size)
	return []oci.SpecOpts{
		oci.WithUserNamespace(m, m),
		oci.WithLinuxNamespace(specs.LinuxNamespace{Type: specs.UserNamespace, Path: p.UserNSPath}),
	}, nil
}

// UserNSMappings is the kubelet's mapping of a pod's range: container id 0
// is host id hostID, for size ids.
func UserNSMappings(hostID, size uint32) []specs.LinuxIDMapping {
	return []specs.LinuxIDMapping{{ContainerID: 0, HostID: hostID, Size: size}}
}

// idmapper returns what replaces a bind mount's source for a pod in its
// own user namespace (nil for the host's): the source's idmapped view. The
// pod's /dev/shm is left as it is (a fresh 1777 tmpfs, as CRI leaves it).
func idmapper(p Pod) func(src string) (string, error) {
	if p.UserNS == nil || p.IDMapped == nil {
		return nil
	}
	return func(src string) (string, error) {
		if src == p.Shm {
			return src, nil
		}
		return p.IDMapped(src)
	}
}
