package spec

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/containerd/containerd/v2/contrib/apparmor"
	"github.com/containerd/containerd/v2/contrib/seccomp"
	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/pkg/oci"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/podhost/podhost/internal/desired/manifest"
)

// AppArmorDefaultProfile is the name podhost loads containerd's default
// AppArmor profile under.
const AppArmorDefaultProfile = "podhost-default"

// securityContext is the container's effective security settings: the
// container's securityContext over the pod's, as the kubelet merges them
// (DetermineEffectiveSecurityContext), plus the pod-only fields.
type securityContext struct {
	runAsUser, runAsGroup *int64
	runAsNonRoot          bool
	privileged            bool
	readOnlyRoot          bool
	noNewPrivs            bool
	caps                  *corev1.Capabilities
	procMount             corev1.ProcMountType
	seccomp               *corev1.SeccompProfile
	apparmor              *corev1.AppArmorProfile
	groups                []int64 // supplementalGroups + fsGroup
	strictGroups          bool    // supplementalGroupsPolicy: Strict
}

func effectiveSecurityContext(pod *corev1.Pod, c *corev1.Container) securityContext {
	var sc securityContext
	if ps := pod.Spec.SecurityContext; ps != nil {
		sc.runAsUser, sc.runAsGroup = ps.RunAsUser, ps.RunAsGroup
		sc.runAsNonRoot = isTrue(ps.RunAsNonRoot)
		sc.seccomp, sc.apparmor = ps.SeccompProfile, ps.AppArmorProfile
		sc.groups = append(sc.groups, ps.SupplementalGroups...)
		if ps.FSGroup != nil {
			sc.groups = append(sc.groups, *ps.FSGroup)
		}
		sc.strictGroups = ps.SupplementalGroupsPolicy != nil &&
			*ps.SupplementalGroupsPolicy == corev1.SupplementalGroupsPolicyStrict
	}
	// The kubelet's apparmor.GetProfile: the container's field, else the
	// pod's deprecated per-container annotation ("static pods may not have
	// had annotations synced to fields"), else the pod's field.
	if prof, ok := manifest.AppArmorFromAnnotation(pod.Annotations[corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix+c.Name]); ok && prof != nil {
		sc.apparmor = prof
	}
	cs := c.SecurityContext
	if cs == nil {
		return sc
	}
	if cs.RunAsUser != nil {
		sc.runAsUser = cs.RunAsUser
	}
	if cs.RunAsGroup != nil {
		sc.runAsGroup = cs.RunAsGroup
	}
	if cs.RunAsNonRoot != nil {
		sc.runAsNonRoot = *cs.RunAsNonRoot
	}
	if cs.SeccompProfile != nil {
		sc.seccomp = cs.SeccompProfile
	}
	if cs.AppArmorProfile != nil {
		sc.apparmor = cs.AppArmorProfile
	}
	if cs.ProcMount != nil {
		sc.procMount = *cs.ProcMount
	}
	sc.privileged = isTrue(cs.Privileged)
	sc.readOnlyRoot = isTrue(cs.ReadOnlyRootFilesystem)
	sc.noNewPrivs = cs.AllowPrivilegeEscalation != nil && !*cs.AllowPrivilegeEscalation
	sc.caps = cs.Capabilities
	return sc
}

// securityOpts: user and groups, capabilities, privileged mode, masked
// paths, no_new_privs, read-only rootfs, AppArmor, sysctls, cgroup namespace.
func securityOpts(p Pod, c Container, sc securityContext) ([]oci.SpecOpts, error) {
	user, err := userOpts(p, c, sc)
	if err != nil {
		return nil, err
	}
	if sc.procMount == corev1.UnmaskedProcMount {
		return nil, errUnsupported("securityContext.procMount", "Unmasked")
	}
	if err := checkSeccomp(sc); err != nil {
		return nil, err
	}
	sysctls, err := sysctlOpt(p.Pod)
	if err != nil {
		return nil, err
	}
	aa, err := apparmorOpt(sc, p.Host.AppArmor)
	if err != nil {
		return nil, err
	}
	opts := append(user, oci.WithNewPrivileges, withoutDefaultCaps, capabilityOpt(sc.caps, p.Host.Capabilities))
	if sc.privileged {
		opts = append(opts, privilegedOpt(p.Host.Capabilities))
	}
	opts = append(opts, withoutAmbientCaps)
	if sc.noNewPrivs {
		opts = append(opts, oci.WithNoNewPrivileges)
	}
	if sc.readOnlyRoot {
		opts = append(opts, oci.WithRootFSReadonly())
	}
	if aa != nil {
		opts = append(opts, aa)
	}
	if sysctls != nil {
		opts = append(opts, sysctls)
	}
	if p.Host.CgroupV2 && !sc.privileged {
		opts = append(opts, oci.WithLinuxNamespace(specs.LinuxNamespace{Type: specs.CgroupNamespace}))
	}
	return opts, nil
}

// userOpts sets uid, gid and supplementary groups like containerd's CRI
// plugin: runAsUser[:runAsGroup] over the image's USER user (names and a
// lone uid are resolved in the rootfs' /etc/passwd), then the user's groups from
// /etc/group (unless supplementalGroupsPolicy is Strict), then
// supplementalGroups and fsGroup. With p.Users and c.ImageDigest set, an
// image's rootfs is read once per user string (UserCache).
func userOpts(p Pod, c Container, sc securityContext) ([]oci.SpecOpts, error) {
	if err := verifyRunAsNonRoot(p.Pod, c.Container, sc, c.Image.User); err != nil {
		return nil, err
	}
	userstr := userString(sc, c.Image.User)
	opts := []oci.SpecOpts{oci.WithUser(userstr)}
	if !sc.strictGroups {
		name, _, _ := strings.Cut(userstr, ":")
		opts = append(opts, withUserGroups(name))
	}
	if p.Users != nil && c.ImageDigest != "" {
		key := userKey{image: c.ImageDigest, user: userstr, groups: !sc.strictGroups}
		opts = []oci.SpecOpts{cachedUser(p.Users, key, opts)}
	}
	if len(sc.groups) > 0 {
		opts = append(opts, withSupplementalGroups(sc.groups))
	}
	return opts, nil
}

// userString is the OCI user string to resolve, as the kubelet and CRI
// build it: runAsUser, else the image USER's part before ':' (the kubelet's
// getImageUser; an image's group is never used: the gid comes from the
// rootfs' /etc/passwd, 0 for an unlisted uid), else root; then
// ":runAsGroup" when set (containerd's GenerateUserString).
func userString(sc securityContext, imageUser string) string {
	user, _, _ := strings.Cut(imageUser, ":")
	if sc.runAsUser != nil {
		user = strconv.FormatInt(*sc.runAsUser, 10)
	}
	if user == "" {
		user = "0"
	}
	if sc.runAsGroup == nil {
		return user
	}
	return user + ":" + strconv.FormatInt(*sc.runAsGroup, 10)
}

// verifyRunAsNonRoot is the kubelet's check: with runAsNonRoot, the uid must
// be known to be non-zero before the container starts, so an image user
// given by name (resolvable only in the rootfs) is refused, and so is a
// numeric one that is no valid uid (above 2^31-1, validation.IsValidUserID):
// containerd before v2.2.4 resolved such a USER ("4294967296") as a name
// in the image's /etc/passwd, which could map it to uid 0 (GO-2026-5378).
// As the CRI image status, the user is parsed as an int64; one that does
// not fit is a name.
func verifyRunAsNonRoot(pod *corev1.Pod, c *corev1.Container, sc securityContext, imageUser string) error {
	if !sc.runAsNonRoot {
		return nil
	}
	who := fmt.Sprintf("(pod: %q, container: %s)", pod.Name+"_"+pod.Namespace+"("+string(pod.UID)+")", c.Name)
	if sc.runAsUser != nil {
		if *sc.runAsUser == 0 {
			return fmt.Errorf("container's runAsUser breaks non-root policy %s", who)
		}
		return nil
	}
	user, _, _ := strings.Cut(imageUser, ":")
	if user == "" {
		return fmt.Errorf("container has runAsNonRoot and image will run as root %s", who)
	}
	uid, err := strconv.ParseInt(user, 10, 64)
	switch {
	case err != nil:
		return fmt.Errorf("container has runAsNonRoot and image has non-numeric user (%s), cannot verify user is non-root %s", user, who)
	case uid == 0:
		return fmt.Errorf("container has runAsNonRoot and image will run as root %s", who)
	}
	if errs := validation.IsValidUserID(uid); len(errs) > 0 {
		return fmt.Errorf("container has runAsNonRoot and image has an invalid user id (%d). (Must be 1-(%d)): %s %s",
			uid, math.MaxInt32, strings.Join(errs, "; "), who)
	}
	return nil
}

// withUserGroups adds the groups /etc/group lists the user in, keeping the
// groups already set (containerd CRI's WithAdditionalGIDs).
func withUserGroups(user string) oci.SpecOpts {
	return func(ctx context.Context, client oci.Client, c *containers.Container, s *oci.Spec) error {
		var before []uint32
		if s.Process != nil {
			before = s.Process.User.AdditionalGids
		}
		if err := oci.WithAdditionalGIDs(user)(ctx, client, c, s); err != nil {
			return err
		}
		s.Process.User.AdditionalGids = mergeGids(s.Process.User.AdditionalGids, before)
		return nil
	}
}

func withSupplementalGroups(groups []int64) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		if s.Process == nil {
			s.Process = &specs.Process{}
		}
		gids := make([]uint32, 0, len(groups))
		for _, g := range groups {
			gids = append(gids, uint32(g))
		}
		s.Process.User.AdditionalGids = mergeGids(s.Process.User.AdditionalGids, gids)
		return nil
	}
}

// mergeGids returns the sorted union.
func mergeGids(a, b []uint32) []uint32 {
	out := append(append([]uint32(nil), a...), b...)
	slices.Sort(out)
	return slices.Compact(out)
}

// droppedDefaultCaps are taken out of containerd's default capability set
// (docker's): CAP_NET_RAW, as podman does, lets a container forge packets
// (ARP, spoofed sources) on the pod network. capabilities.add: [NET_RAW]
// gives it back; ping keeps working through ICMP sockets
// (defaultSysctls' ping_group_range).
var droppedDefaultCaps = []string{"CAP_NET_RAW"}

var withoutDefaultCaps = oci.WithDroppedCapabilities(droppedDefaultCaps)

// capabilityOpt applies capabilities.add/drop to podhost's default set
// as CRI's WithCapabilities: "ALL" adds the host's full set or drops
// everything; other names, in any case, get the CAP_ prefix (manifest
// validation refuses names that carry it already).
func capabilityOpt(caps *corev1.Capabilities, all []string) oci.SpecOpts {
	if caps == nil {
		return oci.Compose()
	}
	var opts []oci.SpecOpts
	add, addAll := capNames(caps.Add)
	drop, dropAll := capNames(caps.Drop)
	if addAll {
		opts = append(opts, withAllCaps(all))
	}
	if dropAll {
		opts = append(opts, oci.WithCapabilities(nil))
	}
	return oci.Compose(append(opts, oci.WithAddedCapabilities(add), oci.WithDroppedCapabilities(drop))...)
}

func capNames(in []corev1.Capability) (names []string, all bool) {
	for _, c := range in {
		n := strings.ToUpper(string(c))
		if n == "ALL" {
			all = true
			continue
		}
		names = append(names, "CAP_"+n)
	}
	return names, all
}

func withAllCaps(all []string) oci.SpecOpts {
	if all == nil {
		return oci.WithAllCurrentCapabilities
	}
	return oci.WithCapabilities(slices.Clone(all))
}

// privilegedOpt is containerd's WithPrivileged with the host's capability
// set, plus the host's devices, all allowed.
func privilegedOpt(all []string) oci.SpecOpts {
	return oci.Compose(
		withAllCaps(all),
		oci.WithMaskedPaths(nil),
		oci.WithReadonlyPaths(nil),
		oci.WithWriteableSysfs,
		oci.WithWriteableCgroupfs,
		oci.WithSelinuxLabel(""),
		oci.WithApparmorProfile(""),
		oci.WithSeccompUnconfined,
		oci.WithHostDevices,
		oci.WithAllDevicesAllowed,
	)
}

func withoutAmbientCaps(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
	if s.Process != nil && s.Process.Capabilities != nil {
		s.Process.Capabilities.Ambient = nil
	}
	return nil
}

// seccompOpt: without a profile, RuntimeDefault with h.SeccompDefault (the
// kubelet's seccompDefault), else Unconfined; RuntimeDefault is
// containerd's default profile; Localhost is the JSON profile at
// <root>/<localhostProfile>, read when the container is created (a missing
// or bad file fails the create: CreateContainerError, as with the kubelet);
// privileged containers are unconfined.
func seccompOpt(sc securityContext, h HostLimits) []oci.SpecOpts {
	if sc.privileged || (sc.seccomp == nil && !h.SeccompDefault) {
		return []oci.SpecOpts{oci.WithSeccompUnconfined}
	}
	if sc.seccomp == nil {
		return []oci.SpecOpts{seccomp.WithDefaultProfile()}
	}
	root := h.SeccompRoot
	switch sc.seccomp.Type {
	case corev1.SeccompProfileTypeRuntimeDefault:
		return []oci.SpecOpts{seccomp.WithDefaultProfile()}
	case corev1.SeccompProfileTypeLocalhost:
		if root == "" {
			root = DefaultSeccompRoot
		}
		return []oci.SpecOpts{seccomp.WithProfile(filepath.Join(root, filepath.Clean("/"+*sc.seccomp.LocalhostProfile)))}
	}
	return []oci.SpecOpts{oci.WithSeccompUnconfined}
}

// checkSeccomp rejects profiles podhost cannot apply.
func checkSeccomp(sc securityContext) error {
	if sc.seccomp == nil || sc.privileged {
		return nil
	}
	switch sc.seccomp.Type {
	case corev1.SeccompProfileTypeUnconfined, corev1.SeccompProfileTypeRuntimeDefault:
		return nil
	case corev1.SeccompProfileTypeLocalhost:
		if sc.seccomp.LocalhostProfile == nil || *sc.seccomp.LocalhostProfile == "" {
			return fmt.Errorf("seccompProfile: localhostProfile is required")
		}
		return nil
	}
	return fmt.Errorf("seccompProfile: unknown type %q", sc.seccomp.Type)
}

// apparmorOpt follows containerd's CRI plugin (GenerateApparmorSpecOpts):
// where AppArmor is enabled, containers without a profile or with
// RuntimeDefault get the default profile, except privileged ones (where it
// is not, a profile asked for is an error, as the kubelet's admission);
// Localhost names a profile already loaded on the host, privileged
// containers included (it is applied after privilegedOpt).
func apparmorOpt(sc securityContext, enabled bool) (oci.SpecOpts, error) {
	typ := corev1.AppArmorProfileTypeRuntimeDefault
	if sc.apparmor != nil {
		typ = sc.apparmor.Type
	}
	switch typ {
	case corev1.AppArmorProfileTypeUnconfined:
		return nil, nil
	case corev1.AppArmorProfileTypeRuntimeDefault:
		if !enabled && sc.apparmor != nil {
			// Asked for, not defaulted: the kubelet refuses such a pod on a
			// host without AppArmor (its AppArmor admit handler).
			return nil, fmt.Errorf("appArmorProfile: RuntimeDefault: AppArmor is not enabled on this host")
		}
		if !enabled || sc.privileged {
			return nil, nil
		}
		return apparmor.WithDefaultProfile(AppArmorDefaultProfile), nil
	case corev1.AppArmorProfileTypeLocalhost:
		if !enabled {
			return nil, fmt.Errorf("appArmorProfile: AppArmor is not enabled on this host")
		}
		if sc.apparmor.LocalhostProfile == nil || *sc.apparmor.LocalhostProfile == "" {
			return nil, fmt.Errorf("appArmorProfile: localhostProfile is required")
		}
		return oci.WithApparmorProfile(*sc.apparmor.LocalhostProfile), nil
	}
	return nil, fmt.Errorf("appArmorProfile: unknown type %q", sc.apparmor.Type)
}

// pingGroupRange is containerd CRI's enable_unprivileged_icmp (on by
// default in containerd 2): every group of a container with a network of
// its own may use ICMP echo sockets, so ping needs no CAP_NET_RAW.
const pingGroupRange = "net.ipv4.ping_group_range"

// sysctlOpt sets the pod's sysctls. Only namespaced ones are accepted (the
// kubelet's list: net.*, kernel.shm*, kernel.msg*, kernel.sem, fs.mqueue.*),
// and not for a namespace shared with the host. Without hostNetwork,
// ping_group_range defaults to "0 2147483647" unless the pod sets it, as
// containerd's CRI, which does not set it in a user namespace
// (hostUsers: false), where those groups are not mapped.
func sysctlOpt(pod *corev1.Pod) (oci.SpecOpts, error) {
	set := map[string]string{}
	if !pod.Spec.HostNetwork && (pod.Spec.HostUsers == nil || *pod.Spec.HostUsers) {
		set[pingGroupRange] = "0 2147483647"
	}
	var sysctls []corev1.Sysctl
	if ps := pod.Spec.SecurityContext; ps != nil {
		sysctls = ps.Sysctls
	}
	if len(set) == 0 && len(sysctls) == 0 {
		return nil, nil
	}
	for _, s := range sysctls {
		name := manifest.SysctlName(s.Name)
		switch manifest.SysctlNamespace(name) {
		case "net":
			if pod.Spec.HostNetwork {
				return nil, fmt.Errorf("sysctl %q is not allowed with hostNetwork", s.Name)
			}
		case "ipc":
			if pod.Spec.HostIPC {
				return nil, fmt.Errorf("sysctl %q is not allowed with hostIPC", s.Name)
			}
		default:
			return nil, fmt.Errorf("sysctl %q is not namespaced", s.Name)
		}
		set[name] = s.Value
	}
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		if s.Linux == nil {
			s.Linux = &specs.Linux{}
		}
		if s.Linux.Sysctl == nil {
			s.Linux.Sysctl = map[string]string{}
		}
		for k, v := range set {
			s.Linux.Sysctl[k] = v
		}
		return nil
	}, nil
}
