// Package spec turns a pod and one of its containers into containerd
// oci.SpecOpts, the way the kubelet and containerd's CRI plugin together
// build a container's OCI runtime spec (kuberuntime + internal/cri/server
// container_create*.go). The caller applies them on top of containerd's
// default spec: client.NewContainer(ctx, id, client.WithNewSnapshot(...),
// client.WithNewSpec(opts...)). WithNewSnapshot must come first: the user
// and group options read /etc/passwd and /etc/group from the rootfs snapshot
// while the spec is generated.
//
// Build itself is pure, but for Pod.PrepareSubPath, which it calls to prepare the
// subPaths of volumeMounts on the host. A few options do read the host or
// the rootfs when applied, exactly like their containerd counterparts: user
// and group lookups (oci.WithUser, oci.WithAdditionalGIDs), host devices for
// privileged containers, the current capability set when
// HostLimits.Capabilities is nil, loading the AppArmor default profile, and
// the mount propagation of HostToContainer and Bidirectional volumeMount
// sources (Pod.LookupMount).
package spec

import (
	"context"
	"errors"
	"fmt"

	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/core/mount"
	"github.com/containerd/containerd/v2/pkg/oci"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/model/records"
)

// GroupAnnotation is the spec annotation containerd's runc v2 shim reads to
// run every container of one group in one shim process
// (cmd/containerd-shim-runc-v2/manager groupLabels). Its value is the pod
// sandbox's shim group (internal/host/shimgroup): several pods share one shim.
const GroupAnnotation = "io.containerd.runc.v2.group"

// HostLimits is what the host lets podhost grant containers. The daemon
// fills it once at start.
type HostLimits struct {
	// MinOOMScoreAdj is the lowest oom_score_adj a container may get. Without
	// CAP_SYS_RESOURCE, runc cannot set a value below podhost's own, so the
	// daemon passes its own value (containerd's restrict_oom_score_adj);
	// -1000 when unrestricted. The zero value allows no negative scores.
	MinOOMScoreAdj int
	// Capabilities is the set granted to privileged containers and for
	// capabilities.add: ["ALL"] (names with the CAP_ prefix). nil: podhost's
	// current effective set, read when the spec is generated.
	Capabilities []string
	// CgroupV2: the host is in unified mode. Non-privileged containers get a
	// cgroup namespace and memory.oom.group=1, like the kubelet and CRI.
	CgroupV2 bool
	// SwapController: the memory cgroup controller accounts swap. Containers
	// then get no swap, like the kubelet's default NoSwap behavior.
	SwapController bool
	// AppArmor: AppArmor is enabled. Containers without a profile, or with
	// RuntimeDefault, get containerd's default profile (loaded on demand).
	AppArmor bool
	// Hostname is the host's hostname (os.Hostname, as containerd's CRI):
	// HOSTNAME of hostNetwork pods.
	Hostname string
	// NodeName is the node name, the host name trimmed and lower-cased (the
	// kubelet's GetHostname): fieldRef spec.nodeName of every pod, as the
	// kubelet's applyDefaults sets a static pod's nodeName whatever its
	// manifest says.
	NodeName string
	// ClusterDomain is the kubelet's clusterDomain (config clusterDomain):
	// the end of a pod's subdomain FQDN (Domain, KernelHostname).
	ClusterDomain string
	// Allocatable is the node's allocatable resources: what
	// resourceFieldRef limits.* report for containers without a limit.
	Allocatable corev1.ResourceList
	// SeccompDefault: a container whose pod and container set no
	// seccompProfile gets RuntimeDefault (config seccompDefault, the
	// kubelet's option); false leaves it unconfined.
	SeccompDefault bool
	// SeccompRoot is where seccomp type Localhost profiles are read from
	// (localhostProfile is relative to it), as the kubelet's
	// <root-dir>/seccomp; "" means DefaultSeccompRoot.
	SeccompRoot string
	// RecursiveReadOnlyMounts: the runtime supports recursively read-only
	// bind mounts (its features list the "rro" mount option and the kernel
	// has mount_setattr, Linux >= 5.12), as CRI's runtime handler feature.
	// recursiveReadOnly IfPossible then mounts with rro, else plain ro;
	// Enabled needs it. Called only for such mounts (the daemon asks the
	// runtime once, on first use); nil means unsupported.
	RecursiveReadOnlyMounts func() bool
}

// DefaultSeccompRoot is SeccompRoot's default.
const DefaultSeccompRoot = "/var/lib/podhost/seccomp"

// Pod is the pod side of a container spec: the desired pod and its sandbox.
type Pod struct {
	Pod       *corev1.Pod
	ShimGroup string // value of GroupAnnotation; "" = no shim grouping
	// Pinned namespaces to join. NetNS is required unless hostNetwork.
	// IPCNS/UTSNS "" give each container a private namespace (not shared in
	// the pod); hostIPC / hostNetwork use the host's regardless.
	NetNS, IPCNS, UTSNS string
	// PIDNS is the pod's pinned PID namespace, which every container joins
	// (shareProcessNamespace: true); required for such a pod.
	PIDNS string
	// Host paths of the pod's files, bind-mounted into every container; ""
	// skips the mount. Shm is ignored for hostIPC pods (host /dev/shm).
	Hosts, Resolv, Hostname, Shm string
	PodIPs                       []string // status.podIP(s) for the downward API
	// ServiceEnv are the service links of the pod's namespace (the
	// kubelet's NAME_SERVICE_HOST, ...), set first when the pod's
	// enableServiceLinks is not false: env and envFrom override them, and
	// $(VAR) sees them.
	ServiceEnv []corev1.EnvVar
	// ServiceEnvFinal: ServiceEnv is the cluster's, for a pod from its
	// API server, with enableServiceLinks applied already (the kubernetes
	// Service's variables are set whatever it says, as by the kubelet).
	ServiceEnvFinal bool
	HostIP          string // status.hostIP(s) for the downward API
	// Volumes maps a pod volume name to its host directory (hostPath,
	// prepared emptyDir). Every volumeMount must name one.
	Volumes map[string]Volume
	// PrepareSubPath returns the host path to bind-mount for a
	// volumeMount's subPath: created if missing, refused if it resolves
	// outside the volume, bind-mounted from an fd opened without following
	// symlinks (volumes.Manager.PrepareSubPath; the kubelet's makeMounts).
	// Build calls it, so Build reads and writes the host when a container
	// has a subPath. nil: a plain join (tests only).
	PrepareSubPath func(SubPathMount) (string, error)
	// MakeMountSource creates a missing bind-mount source as a 0755
	// directory when the container is created (the spec options are
	// applied), as containerd's CRI WithMounts does for every mount: an
	// unset-type hostPath appears when the first container that mounts it
	// is created, not before (volumes.Manager.MakeMountSource). nil:
	// nothing is created (tests).
	MakeMountSource func(path string) error
	// LookupMount finds the host mount that contains a path (its
	// mountinfo line), read when the spec is generated to check the source
	// of a HostToContainer or Bidirectional volumeMount. nil: containerd's
	// mount.Lookup (/proc/self/mountinfo).
	LookupMount func(path string) (mount.Info, error)
	Host        HostLimits
	// Data finds the ConfigMaps and Secrets that env and envFrom reference
	// (configdata.Store.For: its own source's only); nil: none exist.
	Data DataSource
	// Warn, if set, receives warnings for the pod's events (e.g. envFrom
	// keys skipped as invalid variable names). Never given Secret values.
	Warn func(reason, message string)
	// Users keeps user and group lookups per image (Container.ImageDigest);
	// nil reads the rootfs for every container.
	Users *UserCache
	// UserNS is the pod's user namespace range (hostUsers: false), pinned
	// at UserNSPath (which owns NetNS, IPCNS and UTSNS): every container
	// joins it with the mapping 0 → HostID for Size ids, uids and gids
	// (CRI's WithPodNamespaces + oci.WithUserNamespace). nil: the host's.
	UserNS     *records.UserNSRecord
	UserNSPath string
	// IDMapped returns a path showing a bind-mount source through the
	// pod's user namespace (sandbox.Manager.IDMapped), called for every
	// bind mount but /dev/shm when UserNS is set and the spec is applied:
	// what CRI asks runc 1.2 for with mount uidMappings/gidMappings.
	IDMapped func(src string) (string, error)
}

// DataSource finds ConfigMaps and Secrets by namespace and name.
type DataSource interface {
	ConfigMap(namespace, name string) (*corev1.ConfigMap, bool)
	Secret(namespace, name string) (*corev1.Secret, bool)
}

// SubPathMount is one volumeMount with a subPath, as PrepareSubPath gets it.
type SubPathMount struct {
	Volume, Container string
	Index             int    // the volumeMount's index in the container
	VolumePath        string // the volume's host directory
	Path              string // the subPath (expanded), relative, no ".."
}

// Volume is one prepared pod volume.
type Volume struct {
	HostPath string
	// ReadOnly mounts it read-only in every container (configMap and
	// secret volumes, as the kubelet's read-only API data volumes).
	ReadOnly bool
	// NoExec mounts it noexec, nosuid and nodev in every container (image
	// volumes, as the API documents them).
	NoExec bool
}

// Container is the container side of a spec.
type Container struct {
	Container *corev1.Container
	ID        string
	Image     ocispec.ImageConfig
	// ImageDigest names the image (its target's digest) for Pod.Users;
	// "" resolves the user in the rootfs every time.
	ImageDigest string
	// CgroupsPath is set verbatim as linux.cgroupsPath (required).
	CgroupsPath string
	// QOS is informational: the OOM score is computed from the pod.
	QOS corev1.PodQOSClass
	// MemoryCapacity is the machine's memory in bytes (Burstable OOM score).
	MemoryCapacity int64
	// PidsLimit > 0 sets the container's pids.max.
	PidsLimit int64
	// TerminationLog is the host file bind-mounted read-write at the
	// container's terminationMessagePath; "" mounts nothing.
	TerminationLog string
}

// Build returns the options that turn containerd's default spec into the
// container's spec. Errors are configuration errors (the kubelet's
// CreateContainerConfigError).
func Build(p Pod, c Container) ([]oci.SpecOpts, error) {
	if p.Pod == nil || c.Container == nil {
		return nil, errors.New("spec: pod and container are required")
	}
	if c.CgroupsPath == "" {
		return nil, errors.New("spec: cgroupsPath is required")
	}
	env, err := ResolveEnv(p, c.Container)
	if err != nil {
		return nil, err
	}
	args, err := Command(c.Container, c.Image, env)
	if err != nil {
		return nil, err
	}
	sc := effectiveSecurityContext(p.Pod, c.Container)
	mounts, err := containerMounts(p, c.Container, env, sc)
	if err != nil {
		return nil, err
	}
	tlog, err := terminationLogMount(c)
	if err != nil {
		return nil, err
	}
	mounts = append(mounts, tlog...)
	sortByDepth(mounts)
	nsOpts, err := namespaceOpts(p)
	if err != nil {
		return nil, err
	}
	secOpts, err := securityOpts(p, c, sc)
	if err != nil {
		return nil, err
	}
	opts := []oci.SpecOpts{
		oci.WithoutRunMount,
		oci.WithProcessArgs(args...),
		withEnv(processEnv(p, c.Image, env)),
		oci.WithProcessCwd(workingDir(c.Container, c.Image)),
	}
	if c.Container.TTY {
		opts = append(opts, oci.WithTTY)
	}
	if !p.Pod.Spec.HostNetwork {
		opts = append(opts, oci.WithHostname(podHostname(p)))
	}
	opts = append(opts, nsOpts...)
	opts = append(opts, withMounts(mounts, p.LookupMount, p.MakeMountSource, idmapper(p)))
	opts = append(opts, secOpts...)
	opts = append(opts, resourceOpts(p, c)...)
	if p.ShimGroup != "" {
		opts = append(opts, oci.WithAnnotations(map[string]string{GroupAnnotation: p.ShimGroup}))
	}
	// Seccomp's default profile depends on the final capability set: last.
	return append(opts, seccompOpt(sc, p.Host)...), nil
}

func workingDir(c *corev1.Container, img ocispec.ImageConfig) string {
	switch {
	case c.WorkingDir != "":
		return c.WorkingDir
	case img.WorkingDir != "":
		return img.WorkingDir
	}
	return "/"
}

// namespaceOpts joins the pod's pinned namespaces, or the host's for
// hostNetwork/hostIPC/hostPID. The mount namespace stays private, and the
// PID namespace too unless the pod shares it.
func namespaceOpts(p Pod) ([]oci.SpecOpts, error) {
	ps := p.Pod.Spec
	var opts []oci.SpecOpts
	if ps.HostUsers != nil && !*ps.HostUsers {
		uns, err := userNSOpts(p)
		if err != nil {
			return nil, err
		}
		opts = append(opts, uns...)
	}
	join := func(t specs.LinuxNamespaceType, path string) {
		if path != "" {
			opts = append(opts, oci.WithLinuxNamespace(specs.LinuxNamespace{Type: t, Path: path}))
		}
	}
	if ps.HostNetwork {
		opts = append(opts, oci.WithHostNamespace(specs.NetworkNamespace), oci.WithHostNamespace(specs.UTSNamespace))
	} else {
		if p.NetNS == "" {
			return nil, errors.New("spec: pod sandbox has no network namespace")
		}
		join(specs.NetworkNamespace, p.NetNS)
		join(specs.UTSNamespace, p.UTSNS)
	}
	if ps.HostIPC {
		opts = append(opts, oci.WithHostNamespace(specs.IPCNamespace))
	} else {
		join(specs.IPCNamespace, p.IPCNS)
	}
	switch {
	case ps.HostPID:
		opts = append(opts, oci.WithHostNamespace(specs.PIDNamespace))
	case ps.ShareProcessNamespace != nil && *ps.ShareProcessNamespace:
		if p.PIDNS == "" {
			return nil, errors.New("spec: pod sandbox has no shared PID namespace")
		}
		join(specs.PIDNamespace, p.PIDNS)
	}
	return opts, nil
}

// withEnv sets the process environment exactly.
func withEnv(env []string) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		if s.Process == nil {
			s.Process = &specs.Process{}
		}
		s.Process.Env = append([]string(nil), env...)
		return nil
	}
}

// errUnsupported formats a "not supported" configuration error.
func errUnsupported(field, what string) error {
	return fmt.Errorf("%s: %s is not supported", field, what)
}
