package spec

import (
	"errors"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/model/records"
)

// A pod with hostUsers: false: every container joins the pod's pinned user
// namespace with the kubelet's mapping (0 → the range's first id, 65536
// ids, uids and gids), and every bind mount but /dev/shm is mounted from
// its idmapped view.
func TestBuildUserNS(t *testing.T) {
	tests := []struct {
		name    string
		hostID  uint32
		noPath  bool
		idmapEr error
		wantErr string
	}{
		{name: "first range", hostID: 1 << 16},
		{name: "a later range", hostID: 42 << 16},
		{name: "no pinned namespace", hostID: 1 << 16, noPath: true, wantErr: "no user namespace"},
		{name: "idmap fails", hostID: 1 << 16, idmapEr: errors.New("EINVAL"), wantErr: "mount /mnt: EINVAL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := testPod()
			c := testContainer(p)
			no := false
			p.Pod.Spec.HostUsers = &no
			p.UserNS = &records.UserNSRecord{HostID: tt.hostID, Size: 1 << 16}
			if !tt.noPath {
				p.UserNSPath = "/run/podhost/sandboxes/sb1/user"
			}
			p.IDMapped = func(src string) (string, error) {
				if tt.idmapEr != nil && src == "/v" {
					return "", tt.idmapEr
				}
				return "/idmapped" + src, nil
			}
			volume(&p, &c, corev1.VolumeMount{})
			c.TerminationLog = "/var/lib/podhost/pods/x/termination-log"
			c.Container.TerminationMessagePath = "/dev/termination-log"
			s, err := generate(t, p, c)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := []specs.LinuxIDMapping{{ContainerID: 0, HostID: tt.hostID, Size: 1 << 16}}
			eq(t, "uid mappings", s.Linux.UIDMappings, want)
			eq(t, "gid mappings", s.Linux.GIDMappings, want)
			if ns := nsOf(s, specs.UserNamespace); ns == nil || ns.Path != p.UserNSPath {
				t.Fatalf("user namespace = %+v, want path %s", ns, p.UserNSPath)
			}
			eq(t, "net ns joined", nsOf(s, specs.NetworkNamespace).Path, p.NetNS)
			if v, ok := s.Linux.Sysctl[pingGroupRange]; ok {
				t.Errorf("%s = %q: CRI sets no ping_group_range in a user namespace (its gids are not mapped)", pingGroupRange, v)
			}
			for dst, src := range map[string]string{
				"/mnt": "/idmapped/v", "/etc/hosts": "/idmapped" + p.Hosts, "/etc/resolv.conf": "/idmapped" + p.Resolv,
				"/etc/hostname": "/idmapped" + p.Hostname, "/dev/termination-log": "/idmapped" + c.TerminationLog,
				"/dev/shm": p.Shm,
			} {
				if m := mountAt(s, dst); m == nil || m.Source != src {
					t.Errorf("mount %s = %+v, want source %s", dst, m, src)
				}
			}
		})
	}
}

// Without hostUsers: false nothing is mapped, whatever the pod carries.
func TestBuildHostUsers(t *testing.T) {
	p := testPod()
	c := testContainer(p)
	p.IDMapped = func(string) (string, error) { t.Fatal("IDMapped called for a host-users pod"); return "", nil }
	s, err := generate(t, p, c)
	if err != nil {
		t.Fatal(err)
	}
	if nsOf(s, specs.UserNamespace) != nil || len(s.Linux.UIDMappings) != 0 {
		t.Fatalf("user namespace %+v, mappings %v", nsOf(s, specs.UserNamespace), s.Linux.UIDMappings)
	}
}
