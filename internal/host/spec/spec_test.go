package spec

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/core/mount"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/containerd/containerd/v2/pkg/oci"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// defaultCaps is podhost's default capability set: containerd's without
// CAP_NET_RAW.
var defaultCaps = []string{
	"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FSETID", "CAP_FOWNER", "CAP_MKNOD", "CAP_SETGID",
	"CAP_SETUID", "CAP_SETFCAP", "CAP_SETPCAP", "CAP_NET_BIND_SERVICE", "CAP_SYS_CHROOT", "CAP_KILL", "CAP_AUDIT_WRITE",
}

var hostCaps = []string{"CAP_CHOWN", "CAP_NET_ADMIN", "CAP_SYS_ADMIN", "CAP_SYS_TIME", "CAP_KILL"}

func metaFor(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: "default", UID: "uid-1", Labels: map[string]string{"app": name}}
}

func testPod() Pod {
	return Pod{
		Pod: &corev1.Pod{
			ObjectMeta: metaFor("web"),
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}},
		},
		ShimGroup: "sb1",
		NetNS:     "/run/podhost/netns/sb1", IPCNS: "/run/podhost/ipc/sb1", UTSNS: "/run/podhost/uts/sb1",
		Hosts: "/run/podhost/sb1/hosts", Resolv: "/run/podhost/sb1/resolv.conf",
		Hostname: "/run/podhost/sb1/hostname", Shm: "/run/podhost/sb1/shm",
		Host: HostLimits{
			MinOOMScoreAdj: -1000,
			Capabilities:   hostCaps,
			Hostname:       "node1",
		},
	}
}

func testContainer(p Pod) Container {
	return Container{
		Container:      &p.Pod.Spec.Containers[0],
		ID:             "c1",
		Image:          ocispec.ImageConfig{Entrypoint: []string{"/app"}, Cmd: []string{"serve"}, Env: []string{"PATH=/bin"}},
		CgroupsPath:    "/podhost/besteffort/poduid-1/c1",
		MemoryCapacity: 10 << 30,
	}
}

// rootfs is a minimal root filesystem with /etc/passwd and /etc/group.
func rootfs(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	etc := filepath.Join(dir, "etc")
	if err := os.MkdirAll(etc, 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"passwd": "root:x:0:0:root:/root:/bin/sh\napp:x:1001:1002::/home/app:/bin/sh\n",
		"group":  "root:x:0:\napp:x:1002:\nextra:x:1500:app\nwheel:x:10:root\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(etc, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// generate applies Build's options on containerd's default spec without a
// client, with root.path pointing at a temporary rootfs.
func generate(t *testing.T, p Pod, c Container) (*oci.Spec, error) {
	t.Helper()
	opts, err := Build(p, c)
	if err != nil {
		return nil, err
	}
	ctx := namespaces.WithNamespace(context.Background(), "podhost")
	opts = append([]oci.SpecOpts{oci.WithRootFSPath(rootfs(t))}, opts...)
	return oci.GenerateSpecWithPlatform(ctx, nil, "linux/amd64", &containers.Container{ID: c.ID}, opts...)
}

func mountAt(s *oci.Spec, dst string) *specs.Mount {
	for i := range s.Mounts {
		if s.Mounts[i].Destination == dst {
			return &s.Mounts[i]
		}
	}
	return nil
}

func nsOf(s *oci.Spec, t specs.LinuxNamespaceType) *specs.LinuxNamespace {
	for i := range s.Linux.Namespaces {
		if s.Linux.Namespaces[i].Type == t {
			return &s.Linux.Namespaces[i]
		}
	}
	return nil
}

func TestBuildDefaults(t *testing.T) {
	p := testPod()
	c := testContainer(p)
	c.Container.Env = []corev1.EnvVar{{Name: "MODE", Value: "prod"}}
	s, err := generate(t, p, c)
	if err != nil {
		t.Fatal(err)
	}
	eq(t, "args", s.Process.Args, []string{"/app", "serve"})
	eq(t, "env", s.Process.Env, []string{"PATH=/bin", "HOSTNAME=web", "MODE=prod"})
	eq(t, "cwd", s.Process.Cwd, "/")
	eq(t, "hostname", s.Hostname, "web")
	eq(t, "uid:gid", [2]uint32{s.Process.User.UID, s.Process.User.GID}, [2]uint32{0, 0})
	eq(t, "additional gids", s.Process.User.AdditionalGids, []uint32{0, 10})
	eq(t, "cgroupsPath", s.Linux.CgroupsPath, "/podhost/besteffort/poduid-1/c1")
	eq(t, "group annotation", s.Annotations[GroupAnnotation], "sb1")
	eq(t, "oom", *s.Process.OOMScoreAdj, 1000)
	eq(t, "no rlimits (inherited from the shim, as CRI)", len(s.Process.Rlimits), 0)
	eq(t, "no_new_privs", s.Process.NoNewPrivileges, false)
	eq(t, "seccomp", s.Linux.Seccomp == nil, true)
	eq(t, "shares", *s.Linux.Resources.CPU.Shares, uint64(2))
	eq(t, "period", *s.Linux.Resources.CPU.Period, uint64(100000))
	eq(t, "no quota", s.Linux.Resources.CPU.Quota == nil, true)
	eq(t, "no memory limit", s.Linux.Resources.Memory == nil, true)
	eq(t, "caps", s.Process.Capabilities.Bounding, defaultCaps)
	eq(t, "masked paths kept", slices.Contains(s.Linux.MaskedPaths, "/proc/kcore"), true)
	wantNS := map[specs.LinuxNamespaceType]string{
		specs.PIDNamespace: "", specs.MountNamespace: "",
		specs.NetworkNamespace: p.NetNS, specs.IPCNamespace: p.IPCNS, specs.UTSNamespace: p.UTSNS,
	}
	gotNS := map[specs.LinuxNamespaceType]string{}
	for _, ns := range s.Linux.Namespaces {
		gotNS[ns.Type] = ns.Path
	}
	eq(t, "namespaces", gotNS, wantNS)
	for dst, want := range map[string]specs.Mount{
		"/etc/hosts":       {Source: p.Hosts, Destination: "/etc/hosts", Type: "bind", Options: []string{"rbind", "rprivate", "rw"}},
		"/etc/resolv.conf": {Source: p.Resolv, Destination: "/etc/resolv.conf", Type: "bind", Options: []string{"rbind", "rprivate", "rw"}},
		"/etc/hostname":    {Source: p.Hostname, Destination: "/etc/hostname", Type: "bind", Options: []string{"rbind", "rprivate", "rw"}},
		"/dev/shm":         {Source: p.Shm, Destination: "/dev/shm", Type: "bind", Options: []string{"rbind", "rprivate", "rw"}},
		"/sys/fs/cgroup":   {Source: "cgroup", Destination: "/sys/fs/cgroup", Type: "cgroup", Options: []string{"nosuid", "noexec", "nodev", "relatime", "ro"}},
	} {
		if m := mountAt(s, dst); m == nil || !reflect.DeepEqual(*m, want) {
			t.Errorf("mount %s = %+v, want %+v", dst, m, want)
		}
	}
	if mountAt(s, "/run") != nil {
		t.Error("/run tmpfs should be removed")
	}
	if n := countMounts(s, "/dev/shm"); n != 1 {
		t.Errorf("%d /dev/shm mounts, want 1", n)
	}
}

func countMounts(s *oci.Spec, dst string) int {
	n := 0
	for _, m := range s.Mounts {
		if m.Destination == dst {
			n++
		}
	}
	return n
}

func eq[T any](t *testing.T, what string, got, want T) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

func TestBuildHostNetwork(t *testing.T) {
	p := testPod()
	p.Pod.Spec.HostNetwork = true
	p.Pod.Spec.HostIPC = true
	p.NetNS = ""
	c := testContainer(p)
	s, err := generate(t, p, c)
	if err != nil {
		t.Fatal(err)
	}
	for _, typ := range []specs.LinuxNamespaceType{specs.NetworkNamespace, specs.UTSNamespace, specs.IPCNamespace} {
		if nsOf(s, typ) != nil {
			t.Errorf("%s namespace should be the host's", typ)
		}
	}
	eq(t, "hostname", s.Hostname, "")
	eq(t, "env", s.Process.Env, []string{"PATH=/bin", "HOSTNAME=node1"})
	eq(t, "shm", mountAt(s, "/dev/shm").Source, "/dev/shm")
}

// TestBuildSharedPIDNamespace: shareProcessNamespace joins the pod's
// pinned PID namespace; hostPID wins (the decoder refuses both).
func TestBuildSharedPIDNamespace(t *testing.T) {
	p := testPod()
	yes := true
	p.Pod.Spec.ShareProcessNamespace = &yes
	p.PIDNS = "/run/podhost/sandboxes/sb1/pid"
	s, err := generate(t, p, testContainer(p))
	if err != nil {
		t.Fatal(err)
	}
	if ns := nsOf(s, specs.PIDNamespace); ns == nil || ns.Path != p.PIDNS {
		t.Fatalf("pid namespace = %+v, want path %s", ns, p.PIDNS)
	}
	p.Pod.Spec.HostPID = true
	if s, err = generate(t, p, testContainer(p)); err != nil {
		t.Fatal(err)
	}
	if ns := nsOf(s, specs.PIDNamespace); ns != nil {
		t.Errorf("hostPID: pid namespace %+v, want the host's", ns)
	}
}

func TestBuildResources(t *testing.T) {
	tests := []struct {
		name     string
		res      corev1.ResourceRequirements
		host     func(*HostLimits)
		class    string // priorityClassName
		shares   uint64
		quota    int64
		memory   int64
		oom      int
		unified  map[string]string
		swapHost bool
	}{
		{
			name:   "guaranteed",
			res:    requirements("500m", "256Mi", "500m", "256Mi"),
			shares: 512, quota: 50000, memory: 256 << 20, oom: -997,
		},
		{
			name:   "guaranteed restricted oom",
			res:    requirements("500m", "256Mi", "500m", "256Mi"),
			host:   func(h *HostLimits) { h.MinOOMScoreAdj = -500 },
			shares: 512, quota: 50000, memory: 256 << 20, oom: -500,
		},
		{
			name:   "node-critical best effort",
			class:  "system-node-critical",
			shares: 2, oom: -997,
		},
		{
			name:   "node-critical restricted oom",
			class:  "system-node-critical",
			host:   func(h *HostLimits) { h.MinOOMScoreAdj = -500 },
			shares: 2, oom: -500,
		},
		{
			name:   "burstable limit only cpu",
			res:    requirements("", "1Gi", "2", ""),
			shares: 2048, quota: 200000, oom: 900,
		},
		{
			name:   "explicit zero cpu request keeps minimal shares",
			res:    requirements("0", "", "2", ""),
			shares: 2, quota: 200000, oom: 999,
		},
		{
			name:   "cgroup v2 with swap controller",
			res:    requirements("100m", "", "", "64Mi"),
			host:   func(h *HostLimits) { h.CgroupV2, h.SwapController = true, true },
			shares: 102, memory: 64 << 20, oom: 999,
			unified: map[string]string{"memory.oom.group": "1", "memory.swap.max": "0"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := testPod()
			if tt.host != nil {
				tt.host(&p.Host)
			}
			p.Pod.Spec.Containers[0].Resources = tt.res
			p.Pod.Spec.PriorityClassName = tt.class
			s, err := generate(t, p, testContainer(p))
			if err != nil {
				t.Fatal(err)
			}
			r := s.Linux.Resources
			eq(t, "shares", *r.CPU.Shares, tt.shares)
			eq(t, "quota", deref(r.CPU.Quota), tt.quota)
			var mem int64
			if r.Memory != nil {
				mem = deref(r.Memory.Limit)
			}
			eq(t, "memory", mem, tt.memory)
			eq(t, "oom", *s.Process.OOMScoreAdj, tt.oom)
			eq(t, "unified", r.Unified, tt.unified)
			eq(t, "devices kept", r.Devices, []specs.LinuxDeviceCgroup{{Allow: false, Access: "rwm"}})
		})
	}
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func requirements(cpuReq, memReq, cpuLim, memLim string) corev1.ResourceRequirements {
	list := func(cpu, mem string) corev1.ResourceList {
		l := corev1.ResourceList{}
		if cpu != "" {
			l[corev1.ResourceCPU] = resource.MustParse(cpu)
		}
		if mem != "" {
			l[corev1.ResourceMemory] = resource.MustParse(mem)
		}
		return l
	}
	return corev1.ResourceRequirements{Requests: list(cpuReq, memReq), Limits: list(cpuLim, memLim)}
}

func TestBuildPidsLimitAndTTY(t *testing.T) {
	p := testPod()
	p.Pod.Spec.Containers[0].TTY = true
	p.Pod.Spec.Containers[0].WorkingDir = "/work"
	c := testContainer(p)
	c.PidsLimit = 100
	c.Image.WorkingDir = "/img"
	s, err := generate(t, p, c)
	if err != nil {
		t.Fatal(err)
	}
	eq(t, "pids", *s.Linux.Resources.Pids.Limit, int64(100))
	eq(t, "tty", s.Process.Terminal, true)
	eq(t, "cwd", s.Process.Cwd, "/work")
}

func TestBuildCgroupNamespace(t *testing.T) {
	yes := true
	for _, privileged := range []bool{false, true} {
		p := testPod()
		p.Host.CgroupV2 = true
		if privileged {
			p.Pod.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: &yes}
		}
		s, err := generate(t, p, testContainer(p))
		if err != nil {
			t.Fatal(err)
		}
		if got := nsOf(s, specs.CgroupNamespace) != nil; got == privileged {
			t.Errorf("privileged=%v: cgroup namespace = %v", privileged, got)
		}
	}
}

func TestBuildVolumes(t *testing.T) {
	hostToContainer := corev1.MountPropagationHostToContainer
	p := testPod()
	p.Volumes = map[string]Volume{"data": {HostPath: "/var/lib/data"}, "cache": {HostPath: "/pods/uid/cache"}}
	p.LookupMount = mountWith("shared:1")
	c := testContainer(p)
	c.Container.Env = []corev1.EnvVar{{Name: "SUB", Value: "sub"}}
	c.Container.VolumeMounts = []corev1.VolumeMount{
		{Name: "data", MountPath: "/data/deep/", ReadOnly: true, MountPropagation: &hostToContainer},
		{Name: "cache", MountPath: "/cache", SubPath: "a/b"},
		{Name: "cache", MountPath: "/expr", SubPathExpr: "x/$(SUB)"},
		{Name: "cache", MountPath: "/etc/hosts", SubPath: "hosts"},
	}
	s, err := generate(t, p, c)
	if err != nil {
		t.Fatal(err)
	}
	eq(t, "data", *mountAt(s, "/data/deep"), specs.Mount{Source: "/var/lib/data", Destination: "/data/deep", Type: "bind",
		Options: []string{"rbind", "rslave", "ro"}})
	eq(t, "cache", mountAt(s, "/cache").Source, "/pods/uid/cache/a/b")
	eq(t, "expr", mountAt(s, "/expr").Source, "/pods/uid/cache/x/sub")
	eq(t, "hosts from volume", mountAt(s, "/etc/hosts").Source, "/pods/uid/cache/hosts")
	eq(t, "one /etc/hosts", countMounts(s, "/etc/hosts"), 1)
	eq(t, "rootfs propagation", s.Linux.RootfsPropagation, "rslave")
	var order []string
	for _, m := range s.Mounts {
		if m.Type == "bind" {
			order = append(order, m.Destination)
		}
	}
	eq(t, "bind order", order, []string{"/cache", "/expr", "/data/deep", "/etc/hosts", "/etc/resolv.conf", "/etc/hostname", "/dev/shm"})
}

// TestBuildImageVolume: an image volume's mounts are read-only, noexec,
// nosuid and nodev, whatever the volumeMount says (runc sets a bind's
// flags anew: the host mount's do not carry over).
func TestBuildImageVolume(t *testing.T) {
	p := testPod()
	p.Volumes = map[string]Volume{"img": {HostPath: "/pods/uid/volumes/image/img", ReadOnly: true, NoExec: true}}
	c := testContainer(p)
	c.Container.VolumeMounts = []corev1.VolumeMount{{Name: "img", MountPath: "/data"}}
	s, err := generate(t, p, c)
	if err != nil {
		t.Fatal(err)
	}
	eq(t, "image volume", mountAt(s, "/data").Options, []string{"rbind", "rprivate", "ro", "noexec", "nosuid", "nodev"})
}

func TestBuildSubPathHook(t *testing.T) {
	p := testPod()
	c := testContainer(p)
	volume(&p, &c, corev1.VolumeMount{SubPath: "a/b"})
	var got SubPathMount
	p.PrepareSubPath = func(sp SubPathMount) (string, error) {
		got = sp
		return "/pods/uid/volume-subpaths/v/app/0", nil
	}
	s, err := generate(t, p, c)
	if err != nil {
		t.Fatal(err)
	}
	eq(t, "hook args", got, SubPathMount{Volume: "v", Container: c.Container.Name, Index: 0, VolumePath: "/v", Path: "a/b"})
	eq(t, "source", mountAt(s, "/mnt").Source, "/pods/uid/volume-subpaths/v/app/0")

	p.PrepareSubPath = func(SubPathMount) (string, error) { return "", errors.New("resolves outside its volume") }
	_, err = Build(p, c)
	if err == nil || !strings.Contains(err.Error(), "volumeMounts[0] (v): failed to prepare subPath: resolves outside") {
		t.Fatalf("err = %v, want a subPath error naming the volume mount", err)
	}
}

// mountWith fakes Pod.LookupMount: every path is on / with these optional
// mountinfo fields.
func mountWith(optional string) func(string) (mount.Info, error) {
	return func(string) (mount.Info, error) { return mount.Info{Mountpoint: "/", Optional: optional}, nil }
}

// HostToContainer needs a shared or slave source, Bidirectional a shared one,
// or the container's creation fails with CRI's error (ensureSharedOrSlave,
// ensureShared).
func TestBuildMountPropagationSource(t *testing.T) {
	yes := true
	tests := []struct {
		mode     corev1.MountPropagationMode
		optional string
		wantErr  string
	}{
		{corev1.MountPropagationHostToContainer, "shared:3", ""},
		{corev1.MountPropagationHostToContainer, "master:7", ""},
		{corev1.MountPropagationHostToContainer, "", `path "/v" is mounted on "/" but it is not a shared or slave mount`},
		{corev1.MountPropagationBidirectional, "shared:3 master:7", ""},
		{corev1.MountPropagationBidirectional, "master:7", `path "/v" is mounted on "/" but it is not a shared mount`},
		{corev1.MountPropagationNone, "", ""},
	}
	for _, tt := range tests {
		t.Run(string(tt.mode)+"/"+tt.optional, func(t *testing.T) {
			p := testPod()
			c := testContainer(p)
			mode := tt.mode
			volume(&p, &c, corev1.VolumeMount{MountPropagation: &mode})
			c.Container.SecurityContext = &corev1.SecurityContext{Privileged: &yes}
			p.LookupMount = mountWith(tt.optional)
			_, err := generate(t, p, c)
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func TestBuildErrors(t *testing.T) {
	bidi := corev1.MountPropagationBidirectional
	yes := true
	tests := map[string]func(p *Pod, c *Container){
		"no cgroups path":                   func(_ *Pod, c *Container) { c.CgroupsPath = "" },
		"no netns":                          func(p *Pod, _ *Container) { p.NetNS = "" },
		"share process ns":                  func(p *Pod, _ *Container) { p.Pod.Spec.ShareProcessNamespace = &yes },
		"user namespace without one pinned": func(p *Pod, _ *Container) { no := false; p.Pod.Spec.HostUsers = &no },
		"no command":                        func(_ *Pod, c *Container) { c.Image = ocispec.ImageConfig{} },
		"unprepared volume": func(_ *Pod, c *Container) {
			c.Container.VolumeMounts = []corev1.VolumeMount{{Name: "x", MountPath: "/x"}}
		},
		"subPath escape":           func(p *Pod, c *Container) { volume(p, c, corev1.VolumeMount{SubPath: "../etc"}) },
		"absolute subPath":         func(p *Pod, c *Container) { volume(p, c, corev1.VolumeMount{SubPath: "/etc"}) },
		"subPathExpr escape":       func(p *Pod, c *Container) { volume(p, c, corev1.VolumeMount{SubPathExpr: "a/../../b"}) },
		"bidirectional":            func(p *Pod, c *Container) { volume(p, c, corev1.VolumeMount{MountPropagation: &bidi}) },
		"seccomp localhost":        func(p *Pod, _ *Container) { seccompPod(p, corev1.SeccompProfileTypeLocalhost) },
		"host sysctl":              func(p *Pod, _ *Container) { sysctlPod(p, "kernel.panic") },
		"net sysctl host net":      func(p *Pod, _ *Container) { p.Pod.Spec.HostNetwork = true; sysctlPod(p, "net.core.somaxconn") },
		"apparmor localhost":       func(p *Pod, _ *Container) { apparmorPod(p, corev1.AppArmorProfileTypeLocalhost) },
		"apparmor runtime default": func(p *Pod, _ *Container) { apparmorPod(p, corev1.AppArmorProfileTypeRuntimeDefault) },
		"unmasked proc mount": func(_ *Pod, c *Container) {
			c.Container.SecurityContext = &corev1.SecurityContext{ProcMount: ptr(corev1.UnmaskedProcMount)}
		},
		"configmap env source": func(_ *Pod, c *Container) {
			c.Container.EnvFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{}}}
		},
	}
	for name, mutate := range tests {
		t.Run(name, func(t *testing.T) {
			p := testPod()
			c := testContainer(p)
			mutate(&p, &c)
			if _, err := Build(p, c); err == nil {
				t.Fatal("want error")
			}
		})
	}
}

func volume(p *Pod, c *Container, vm corev1.VolumeMount) {
	p.Volumes = map[string]Volume{"v": {HostPath: "/v"}}
	vm.Name, vm.MountPath = "v", "/mnt"
	c.Container.VolumeMounts = []corev1.VolumeMount{vm}
}

func seccompPod(p *Pod, typ corev1.SeccompProfileType) {
	p.Pod.Spec.SecurityContext = &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: typ}}
}

func apparmorPod(p *Pod, typ corev1.AppArmorProfileType) {
	p.Pod.Spec.SecurityContext = &corev1.PodSecurityContext{AppArmorProfile: &corev1.AppArmorProfile{Type: typ}}
}

func sysctlPod(p *Pod, name string) {
	p.Pod.Spec.SecurityContext = &corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{{Name: name, Value: "1"}}}
}

// seccomp type Localhost: the JSON profile under the seccomp root, read
// when the container is created; a missing file fails the create (the
// kubelet's CreateContainerError), not the spec's build.
func TestSeccompLocalhost(t *testing.T) {
	root := t.TempDir()
	profile := `{"defaultAction":"SCMP_ACT_ERRNO","syscalls":[{"names":["read","write"],"action":"SCMP_ACT_ALLOW"}]}`
	if err := os.MkdirAll(filepath.Join(root, "profiles"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "profiles", "audit.json"), []byte(profile), 0o644); err != nil {
		t.Fatal(err)
	}
	build := func(name string) (*oci.Spec, error) {
		p := testPod()
		p.Host.SeccompRoot = root
		p.Pod.Spec.SecurityContext = &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{
			Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: &name}}
		return generate(t, p, testContainer(p))
	}
	s, err := build("profiles/audit.json")
	if err != nil {
		t.Fatal(err)
	}
	if sc := s.Linux.Seccomp; sc == nil || sc.DefaultAction != "SCMP_ACT_ERRNO" || len(sc.Syscalls) != 1 || len(sc.Syscalls[0].Names) != 2 {
		t.Fatalf("seccomp = %+v, want the profile's", s.Linux.Seccomp)
	}
	if _, err := build("profiles/missing.json"); err == nil || !strings.Contains(err.Error(), "missing.json") {
		t.Fatalf("missing profile: err = %v, want an error naming the file", err)
	}
	p := testPod()
	missing := "missing.json"
	p.Pod.Spec.SecurityContext = &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{
		Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: &missing}}
	if _, err := Build(p, testContainer(p)); err != nil {
		t.Fatalf("Build must not read the profile (the create does): %v", err)
	}
}
