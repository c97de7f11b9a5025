package spec

import (
	"slices"
	"strings"
	"testing"

	"github.com/containerd/containerd/v2/pkg/oci"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	corev1 "k8s.io/api/core/v1"
)

func TestBuildUser(t *testing.T) {
	i64 := func(v int64) *int64 { return &v }
	tests := []struct {
		name      string
		imageUser string
		podSC     *corev1.PodSecurityContext
		sc        *corev1.SecurityContext
		uid, gid  uint32
		gids      []uint32
	}{
		{name: "image user name", imageUser: "app", uid: 1001, gid: 1002, gids: []uint32{1002, 1500}},
		{name: "image numeric uid resolves gid", imageUser: "1001", uid: 1001, gid: 1002, gids: []uint32{1002, 1500}},
		{name: "unknown numeric uid", imageUser: "4242", uid: 4242, gid: 0, gids: []uint32{0}},
		// The image's group is never used (the kubelet's getImageUser keeps the
		// part before ':'): the gid is the passwd entry's, else 0.
		{name: "uid:gid, uid unlisted", imageUser: "7:8", uid: 7, gid: 0, gids: []uint32{0}},
		{name: "uid:gid, uid listed", imageUser: "1001:10", uid: 1001, gid: 1002, gids: []uint32{1002, 1500}},
		{name: "name:group", imageUser: "app:wheel", uid: 1001, gid: 1002, gids: []uint32{1002, 1500}},
		{
			name:      "runAsGroup wins over the image's group",
			imageUser: "1001:10",
			podSC:     &corev1.PodSecurityContext{RunAsGroup: i64(5)},
			uid:       1001, gid: 5, gids: []uint32{5, 1500},
		},
		{
			name:  "runAsUser/Group, supplemental and fsGroup",
			podSC: &corev1.PodSecurityContext{RunAsUser: i64(1000), SupplementalGroups: []int64{3000}, FSGroup: i64(4000)},
			sc:    &corev1.SecurityContext{RunAsGroup: i64(2000)},
			uid:   1000, gid: 2000, gids: []uint32{2000, 3000, 4000},
		},
		{
			name:      "runAsGroup keeps image user",
			imageUser: "app",
			sc:        &corev1.SecurityContext{RunAsGroup: i64(5)},
			uid:       1001, gid: 5, gids: []uint32{5, 1500},
		},
		{
			name:      "strict policy skips /etc/group",
			imageUser: "app",
			podSC: &corev1.PodSecurityContext{SupplementalGroupsPolicy: ptr(corev1.SupplementalGroupsPolicyStrict),
				SupplementalGroups: []int64{9}},
			uid: 1001, gid: 1002, gids: []uint32{9, 1002},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := testPod()
			p.Pod.Spec.SecurityContext = tt.podSC
			p.Pod.Spec.Containers[0].SecurityContext = tt.sc
			c := testContainer(p)
			c.Image.User = tt.imageUser
			s, err := generate(t, p, c)
			if err != nil {
				t.Fatal(err)
			}
			u := s.Process.User
			eq(t, "uid", u.UID, tt.uid)
			eq(t, "gid", u.GID, tt.gid)
			eq(t, "gids", u.AdditionalGids, tt.gids)
		})
	}
}

func ptr[T any](v T) *T { return &v }

func TestRunAsNonRoot(t *testing.T) {
	yes := true
	tests := []struct {
		name      string
		imageUser string
		runAs     *int64
		wantErr   string
	}{
		{name: "image root", imageUser: "", wantErr: "image will run as root"},
		{name: "image uid 0", imageUser: "0:0", wantErr: "image will run as root"},
		{name: "image name", imageUser: "app", wantErr: "non-numeric user (app)"},
		{name: "image numeric", imageUser: "1001"},
		{name: "image uid beyond uint32", imageUser: "4294967296", wantErr: "image has an invalid user id (4294967296). (Must be 1-(2147483647))"},
		{name: "image uid beyond int32", imageUser: "2147483648:0", wantErr: "invalid user id (2147483648)"},
		{name: "image uid negative", imageUser: "-1", wantErr: "invalid user id (-1)"},
		{name: "image uid beyond int64", imageUser: "99999999999999999999", wantErr: "non-numeric user (99999999999999999999)"},
		{name: "runAsUser 0", imageUser: "1001", runAs: ptr(int64(0)), wantErr: "runAsUser breaks non-root policy"},
		{name: "runAsUser overrides name", imageUser: "app", runAs: ptr(int64(5))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := testPod()
			p.Pod.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsNonRoot: &yes, RunAsUser: tt.runAs}
			c := testContainer(p)
			c.Image.User = tt.imageUser
			_, err := Build(p, c)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func TestBuildSecurity(t *testing.T) {
	no, yes := false, true
	tests := []struct {
		name  string
		sc    *corev1.SecurityContext
		podSC *corev1.PodSecurityContext
		check func(t *testing.T, s *oci.Spec)
	}{
		{
			name: "add and drop caps",
			sc: &corev1.SecurityContext{Capabilities: &corev1.Capabilities{
				Add: []corev1.Capability{"NET_ADMIN", "sys_time"}, Drop: []corev1.Capability{"CHOWN", "kill"},
			}},
			check: func(t *testing.T, s *oci.Spec) {
				b := s.Process.Capabilities.Bounding
				for _, c := range []string{"CAP_NET_ADMIN", "CAP_SYS_TIME", "CAP_SETUID"} {
					if !slices.Contains(b, c) {
						t.Errorf("missing %s in %v", c, b)
					}
				}
				for _, c := range []string{"CAP_CHOWN", "CAP_KILL"} {
					if slices.Contains(b, c) {
						t.Errorf("%s not dropped: %v", c, b)
					}
				}
				eq(t, "effective", s.Process.Capabilities.Effective, b)
			},
		},
		{
			name: "drop all add one",
			sc: &corev1.SecurityContext{Capabilities: &corev1.Capabilities{
				Add: []corev1.Capability{"NET_BIND_SERVICE"}, Drop: []corev1.Capability{"ALL"},
			}},
			check: func(t *testing.T, s *oci.Spec) {
				eq(t, "bounding", s.Process.Capabilities.Bounding, []string{"CAP_NET_BIND_SERVICE"})
			},
		},
		{
			name: "add all",
			sc:   &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"ALL"}}},
			check: func(t *testing.T, s *oci.Spec) {
				eq(t, "bounding", s.Process.Capabilities.Bounding, hostCaps)
			},
		},
		{
			name: "read-only root, no privilege escalation, runtime default seccomp",
			sc: &corev1.SecurityContext{ReadOnlyRootFilesystem: &yes, AllowPrivilegeEscalation: &no,
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			check: func(t *testing.T, s *oci.Spec) {
				eq(t, "readonly", s.Root.Readonly, true)
				eq(t, "no_new_privs", s.Process.NoNewPrivileges, true)
				if s.Linux.Seccomp == nil || s.Linux.Seccomp.DefaultAction != specs.ActErrno {
					t.Errorf("want containerd's default seccomp profile, got %+v", s.Linux.Seccomp)
				}
				eq(t, "resolv ro", mountAt(s, "/etc/resolv.conf").Options, []string{"rbind", "rprivate", "ro"})
				eq(t, "hosts rw", mountAt(s, "/etc/hosts").Options, []string{"rbind", "rprivate", "rw"})
			},
		},
		{
			name:  "pod seccomp, container unconfined wins",
			podSC: &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			sc:    &corev1.SecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}},
			check: func(t *testing.T, s *oci.Spec) { eq(t, "seccomp", s.Linux.Seccomp == nil, true) },
		},
		{
			name:  "privileged",
			podSC: &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			sc:    &corev1.SecurityContext{Privileged: &yes},
			check: checkPrivileged,
		},
		{
			name: "sysctls",
			podSC: &corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{
				{Name: "net.ipv4.ip_unprivileged_port_start", Value: "0"}, {Name: "kernel/shm_rmid_forced", Value: "1"},
			}},
			check: func(t *testing.T, s *oci.Spec) {
				eq(t, "sysctl", s.Linux.Sysctl, map[string]string{
					"net.ipv4.ip_unprivileged_port_start": "0", "kernel.shm_rmid_forced": "1",
					"net.ipv4.ping_group_range": "0 2147483647",
				})
			},
		},
		{
			name:  "ping_group_range set by the pod",
			podSC: &corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{{Name: "net.ipv4.ping_group_range", Value: "1 0"}}},
			check: func(t *testing.T, s *oci.Spec) {
				eq(t, "sysctl", s.Linux.Sysctl, map[string]string{"net.ipv4.ping_group_range": "1 0"})
			},
		},
		{
			name: "NET_RAW added back",
			sc:   &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_RAW"}}},
			check: func(t *testing.T, s *oci.Spec) {
				eq(t, "NET_RAW", slices.Contains(s.Process.Capabilities.Effective, "CAP_NET_RAW"), true)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := testPod()
			p.Pod.Spec.SecurityContext = tt.podSC
			p.Pod.Spec.Containers[0].SecurityContext = tt.sc
			s, err := generate(t, p, testContainer(p))
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, s)
		})
	}
}

// seccompDefault (the kubelet's option): RuntimeDefault for a container
// whose pod and container set no profile; an explicit profile and
// privileged containers are left as they are.
func TestSeccompDefault(t *testing.T) {
	yes := true
	unconfined := &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}
	for _, tt := range []struct {
		name        string
		on          bool
		podSC       *corev1.PodSecurityContext
		sc          *corev1.SecurityContext
		wantProfile bool
	}{
		{name: "off", on: false},
		{name: "on", on: true, wantProfile: true},
		{name: "on, pod unconfined", on: true, podSC: &corev1.PodSecurityContext{SeccompProfile: unconfined}},
		{name: "on, container unconfined", on: true, sc: &corev1.SecurityContext{SeccompProfile: unconfined}},
		{name: "on, privileged", on: true, sc: &corev1.SecurityContext{Privileged: &yes}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := testPod()
			p.Host.SeccompDefault = tt.on
			p.Pod.Spec.SecurityContext = tt.podSC
			p.Pod.Spec.Containers[0].SecurityContext = tt.sc
			s, err := generate(t, p, testContainer(p))
			if err != nil {
				t.Fatal(err)
			}
			if got := s.Linux.Seccomp != nil && s.Linux.Seccomp.DefaultAction == specs.ActErrno; got != tt.wantProfile {
				t.Errorf("containerd's default profile: %v, want %v (%+v)", got, tt.wantProfile, s.Linux.Seccomp)
			}
		})
	}
}

func checkPrivileged(t *testing.T, s *oci.Spec) {
	eq(t, "bounding", s.Process.Capabilities.Bounding, hostCaps)
	eq(t, "seccomp", s.Linux.Seccomp == nil, true)
	eq(t, "masked", len(s.Linux.MaskedPaths), 0)
	eq(t, "readonly paths", len(s.Linux.ReadonlyPaths), 0)
	eq(t, "devices", s.Linux.Resources.Devices, []specs.LinuxDeviceCgroup{{Allow: true, Access: "rwm"}})
	eq(t, "sysfs rw", slices.Contains(mountAt(s, "/sys").Options, "rw"), true)
	eq(t, "cgroupfs rw", slices.Contains(mountAt(s, "/sys/fs/cgroup").Options, "rw"), true)
}

// AppArmor as containerd's GenerateApparmorSpecOpts: privileged containers
// skip only the default profile; a Localhost profile still applies to them.
func TestBuildAppArmor(t *testing.T) {
	yes := true
	local := &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeLocalhost, LocalhostProfile: ptr("my-profile")}
	tests := []struct {
		name       string
		profile    *corev1.AppArmorProfile
		podProfile *corev1.AppArmorProfile
		annotation string
		privileged bool
		want       string
	}{
		{name: "localhost", profile: local, want: "my-profile"},
		{name: "privileged localhost", profile: local, privileged: true, want: "my-profile"},
		{name: "privileged default", privileged: true, want: ""},
		{name: "privileged runtime default", profile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeRuntimeDefault},
			privileged: true, want: ""},
		{name: "unconfined", profile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}, want: ""},
		// The deprecated annotation, as the kubelet's apparmor.GetProfile:
		// under the container's field, over the pod's.
		{name: "annotation localhost", annotation: "localhost/ann-profile", want: "ann-profile"},
		{name: "annotation unconfined over pod field", annotation: "unconfined", podProfile: local, want: ""},
		{name: "annotation over pod field", annotation: "localhost/ann-profile", podProfile: local, want: "ann-profile"},
		{name: "container field over annotation", annotation: "unconfined", profile: local, want: "my-profile"},
		{name: "annotation of another container", annotation: "", podProfile: local, want: "my-profile"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := testPod()
			p.Host.AppArmor = true
			p.Pod.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{AppArmorProfile: tt.profile}
			p.Pod.Spec.SecurityContext = &corev1.PodSecurityContext{AppArmorProfile: tt.podProfile}
			p.Pod.Annotations = map[string]string{corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix + "other": "localhost/other"}
			if tt.annotation != "" {
				p.Pod.Annotations[corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix+p.Pod.Spec.Containers[0].Name] = tt.annotation
			}
			if tt.privileged {
				p.Pod.Spec.Containers[0].SecurityContext.Privileged = &yes
			}
			s, err := generate(t, p, testContainer(p))
			if err != nil {
				t.Fatal(err)
			}
			eq(t, "apparmor profile", s.Process.ApparmorProfile, tt.want)
		})
	}
}
