package spec

import (
	"context"
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/core/mount"
	"github.com/containerd/containerd/v2/pkg/oci"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	corev1 "k8s.io/api/core/v1"
)

// Container paths of the pod files.
const (
	etcHosts    = "/etc/hosts"
	etcResolv   = "/etc/resolv.conf"
	etcHostname = "/etc/hostname"
	devShm      = "/dev/shm"
)

// containerMounts lists the container's bind mounts: its volumeMounts, then
// the pod files a volumeMount does not already cover, sorted so that parents
// come before children (containerd's orderedMounts).
func containerMounts(p Pod, c *corev1.Container, env []corev1.EnvVar, sc securityContext) ([]specs.Mount, error) {
	var mounts []specs.Mount
	taken := map[string]bool{}
	for i, vm := range c.VolumeMounts {
		m, err := volumeMount(p, SubPathMount{Volume: vm.Name, Container: c.Name, Index: i}, vm, env, sc.privileged)
		if err != nil {
			return nil, fmt.Errorf("volumeMounts[%d] (%s): %w", i, vm.Name, err)
		}
		taken[m.Destination] = true
		mounts = append(mounts, m)
	}
	shm := p.Shm
	if p.Pod.Spec.HostIPC {
		shm = devShm
	}
	for _, f := range []struct {
		dst, src string
		ro       bool
	}{
		// The kubelet mounts /etc/hosts read-write; containerd mounts the
		// others read-only only for a read-only root filesystem.
		{etcHosts, p.Hosts, false},
		{etcResolv, p.Resolv, sc.readOnlyRoot},
		{etcHostname, p.Hostname, sc.readOnlyRoot},
		{devShm, shm, false},
	} {
		if f.src == "" || taken[f.dst] {
			continue
		}
		mounts = append(mounts, bindMount(f.src, f.dst, "rprivate", f.ro))
	}
	sortByDepth(mounts)
	return mounts, nil
}

// sortByDepth orders mounts parents first, keeping the order of equal depths.
func sortByDepth(mounts []specs.Mount) {
	sort.SliceStable(mounts, func(i, j int) bool {
		return strings.Count(mounts[i].Destination, "/") < strings.Count(mounts[j].Destination, "/")
	})
}

// terminationLogMount bind-mounts the instance's termination-log file at
// terminationMessagePath, read-write even with a read-only root filesystem
// (the kubelet's makeMounts). It comes after the volume mounts, so at an
// equal path it is mounted on top of them, as with the kubelet.
func terminationLogMount(c Container) ([]specs.Mount, error) {
	dst := c.Container.TerminationMessagePath
	if c.TerminationLog == "" || dst == "" {
		return nil, nil
	}
	if !path.IsAbs(dst) {
		return nil, fmt.Errorf("terminationMessagePath %q must be absolute", dst)
	}
	return []specs.Mount{bindMount(c.TerminationLog, path.Clean(dst), "rprivate", false)}, nil
}

func bindMount(src, dst, propagation string, ro bool) specs.Mount {
	mode := "rw"
	if ro {
		mode = "ro"
	}
	return specs.Mount{Source: src, Destination: dst, Type: "bind", Options: []string{"rbind", propagation, mode}}
}

// volumeMount turns one volumeMount into a bind mount of its volume's host
// directory (or a subPath below it); sp names the volumeMount.
func volumeMount(p Pod, sp SubPathMount, vm corev1.VolumeMount, env []corev1.EnvVar, privileged bool) (specs.Mount, error) {
	vol, ok := p.Volumes[vm.Name]
	if !ok || vol.HostPath == "" {
		return specs.Mount{}, fmt.Errorf("volume %q is not prepared", vm.Name)
	}
	if !path.IsAbs(vm.MountPath) {
		return specs.Mount{}, fmt.Errorf("mountPath %q must be absolute", vm.MountPath)
	}
	sub := vm.SubPath
	if vm.SubPathExpr != "" {
		var err error
		if sub, err = expandSubPathExpr(vm.SubPathExpr, env); err != nil {
			return specs.Mount{}, err
		}
	}
	sp.VolumePath, sp.Path = vol.HostPath, sub
	src, err := subPathSource(p, sp)
	if err != nil {
		return specs.Mount{}, err
	}
	prop, err := propagation(vm.MountPropagation, privileged)
	if err != nil {
		return specs.Mount{}, err
	}
	rro, err := resolveRecursiveReadOnly(vm, p.Host.RecursiveReadOnlyMounts)
	if err != nil {
		return specs.Mount{}, fmt.Errorf("failed to resolve recursive read-only mode: %w", err)
	}
	m := bindMount(src, path.Clean(vm.MountPath), prop, vm.ReadOnly || vol.ReadOnly)
	if rro {
		// CRI's WithMounts: rro in place of ro (runc applies it to every
		// submount with mount_setattr(AT_RECURSIVE)).
		m.Options[len(m.Options)-1] = "rro"
	}
	if vol.NoExec { // runc's remount of the bind sets the flags anew: the source's noexec does not carry over
		m.Options = append(m.Options, "noexec", "nosuid", "nodev")
	}
	return m, nil
}

// resolveRecursiveReadOnly is the kubelet's: whether a volumeMount is
// mounted recursively read-only. IfPossible is rro when the runtime
// supports it, else plain ro; Enabled requires it. Both need readOnly and
// no propagation (API validation refuses the rest first).
func resolveRecursiveReadOnly(vm corev1.VolumeMount, supportedFn func() bool) (bool, error) {
	if vm.RecursiveReadOnly == nil || *vm.RecursiveReadOnly == corev1.RecursiveReadOnlyDisabled {
		return false, nil
	}
	if !vm.ReadOnly {
		return false, fmt.Errorf("volume %q requested recursive read-only mode, but it is not read-only", vm.Name)
	}
	if vm.MountPropagation != nil && *vm.MountPropagation != corev1.MountPropagationNone {
		return false, fmt.Errorf("volume %q requested recursive read-only mode, but it is not compatible with propagation %q",
			vm.Name, *vm.MountPropagation)
	}
	supported := supportedFn != nil && supportedFn()
	switch mode := *vm.RecursiveReadOnly; mode {
	case corev1.RecursiveReadOnlyIfPossible:
		return supported, nil
	case corev1.RecursiveReadOnlyEnabled:
		if !supported {
			return false, fmt.Errorf("volume %q requested recursive read-only mode, but it is not supported by the runtime", vm.Name)
		}
		return true, nil
	default:
		return false, fmt.Errorf("unknown recursive read-only mode %q", mode)
	}
}

// expandSubPathExpr is the kubelet's ExpandContainerVolumeMounts: $(VAR)
// references take the container's environment; one that is missing or
// empty is an error (the container waits with CreateContainerConfigError).
func expandSubPathExpr(expr string, env []corev1.EnvVar) (string, error) {
	vars := envMap(env)
	var missing []string
	out := Expand(expr, func(name string) (string, bool) {
		v := vars[name]
		if v == "" && !slices.Contains(missing, name) {
			missing = append(missing, name)
		}
		return v, true
	})
	if len(missing) > 0 {
		slices.Sort(missing)
		return "", fmt.Errorf("subPathExpr %q: missing value for %s", expr, strings.Join(missing, ", "))
	}
	return out, nil
}

// subPathSource is the host source of a volumeMount: the volume's directory
// or, with a subPath, what Pod.PrepareSubPath makes of it. Like the kubelet,
// an absolute subPath or one with ".." components is refused first.
func subPathSource(p Pod, sp SubPathMount) (string, error) {
	sub := sp.Path
	if sub == "" {
		return sp.VolumePath, nil
	}
	if filepath.IsAbs(sub) {
		return "", fmt.Errorf("subPath %q must be relative", sub)
	}
	for _, part := range strings.Split(filepath.ToSlash(sub), "/") {
		if part == ".." {
			return "", fmt.Errorf("subPath %q must not contain '..'", sub)
		}
	}
	if p.PrepareSubPath == nil {
		return filepath.Join(sp.VolumePath, sub), nil
	}
	src, err := p.PrepareSubPath(sp)
	if err != nil {
		return "", fmt.Errorf("failed to prepare subPath: %w", err)
	}
	return src, nil
}

func propagation(mode *corev1.MountPropagationMode, privileged bool) (string, error) {
	if mode == nil {
		return "rprivate", nil
	}
	switch *mode {
	case corev1.MountPropagationNone:
		return "rprivate", nil
	case corev1.MountPropagationHostToContainer:
		return "rslave", nil
	case corev1.MountPropagationBidirectional:
		if !privileged {
			return "", fmt.Errorf("mountPropagation Bidirectional requires a privileged container")
		}
		return "rshared", nil
	}
	return "", fmt.Errorf("unknown mountPropagation %q", *mode)
}

// withMounts adds the cgroup filesystem (read-only; privileged containers
// get it read-write later) and the container's bind mounts, dropping the
// default mounts they replace (everything under /dev when /dev itself is
// mounted), and sets the rootfs propagation the mounts need. Like CRI's
// WithMounts, a missing source is made a directory first (mkdir; nil:
// none), then an rshared mount's source must be on a shared mount and an
// rslave one's on a shared or slave mount (lookup finds it; nil:
// mount.Lookup), else the container's creation fails.
func withMounts(mounts []specs.Mount, lookup func(string) (mount.Info, error), mkdir func(string) error, idmap func(string) (string, error)) oci.SpecOpts {
	if lookup == nil {
		lookup = mount.Lookup
	}
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		s.Mounts = append(s.Mounts, specs.Mount{
			Source: "cgroup", Destination: "/sys/fs/cgroup", Type: "cgroup",
			Options: []string{"nosuid", "noexec", "nodev", "relatime", "ro"},
		})
		taken := map[string]bool{}
		for _, m := range mounts {
			taken[m.Destination] = true
		}
		kept := s.Mounts[:0]
		for _, m := range s.Mounts {
			dst := path.Clean(m.Destination)
			if taken[dst] || (taken["/dev"] && strings.HasPrefix(dst, "/dev/")) {
				continue
			}
			kept = append(kept, m)
		}
		s.Mounts = append(kept, mounts...)
		for _, m := range mounts {
			if mkdir == nil {
				break
			}
			if err := mkdir(m.Source); err != nil {
				return err
			}
		}
		if err := idmapSources(s.Mounts[len(kept):], idmap); err != nil {
			return err
		}
		if s.Linux == nil {
			s.Linux = &specs.Linux{}
		}
		return setPropagation(s.Linux, mounts, lookup)
	}
}

// idmapSources replaces the source of each bind mount by its idmapped view
// (a pod in its own user namespace); idmap nil changes nothing.
func idmapSources(mounts []specs.Mount, idmap func(string) (string, error)) error {
	if idmap == nil {
		return nil
	}
	for i := range mounts {
		src, err := idmap(mounts[i].Source)
		if err != nil {
			return fmt.Errorf("mount %s: %w", mounts[i].Destination, err)
		}
		mounts[i].Source = src
	}
	return nil
}

// setPropagation checks the source of every rshared and rslave mount
// (containerd CRI's ensureShared / ensureSharedOrSlave) and sets the rootfs
// propagation they need.
func setPropagation(l *specs.Linux, mounts []specs.Mount, lookup func(string) (mount.Info, error)) error {
	for _, m := range mounts {
		switch {
		case hasOption(m, "rshared"):
			if err := ensurePropagation(m.Source, lookup, "shared"); err != nil {
				return err
			}
			l.RootfsPropagation = "rshared"
		case hasOption(m, "rslave"):
			if err := ensurePropagation(m.Source, lookup, "shared or slave"); err != nil {
				return err
			}
			if l.RootfsPropagation != "rshared" {
				l.RootfsPropagation = "rslave"
			}
		}
	}
	return nil
}

// ensurePropagation fails unless the mount containing src is shared (its
// mountinfo optional fields have shared:N) or, with want "shared or slave",
// a slave (master:N), with CRI's messages.
func ensurePropagation(src string, lookup func(string) (mount.Info, error), want string) error {
	info, err := lookup(src)
	if err != nil {
		return err
	}
	for _, opt := range strings.Fields(info.Optional) {
		if strings.HasPrefix(opt, "shared:") || (want != "shared" && strings.HasPrefix(opt, "master:")) {
			return nil
		}
	}
	return fmt.Errorf("path %q is mounted on %q but it is not a %s mount", src, info.Mountpoint, want)
}

func hasOption(m specs.Mount, opt string) bool {
	for _, o := range m.Options {
		if o == opt {
			return true
		}
	}
	return false
}
