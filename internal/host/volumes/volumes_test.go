package volumes

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/desired/configdata"
)

func hostPathType(t corev1.HostPathType) *corev1.HostPathType { return &t }

func TestPrepareHostPath(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		path    string
		typ     corev1.HostPathType
		wantErr string
	}{
		{"unset takes a file", file, corev1.HostPathUnset, ""},
		{"directory ok", dir, corev1.HostPathDirectory, ""},
		{"directory missing", filepath.Join(dir, "nope"), corev1.HostPathDirectory, "no such file"},
		{"directory is file", file, corev1.HostPathDirectory, "is not of type Directory"},
		{"file ok", file, corev1.HostPathFile, ""},
		{"dir or create creates", filepath.Join(dir, "a", "b"), corev1.HostPathDirectoryOrCreate, ""},
		{"file or create creates", filepath.Join(dir, "created"), corev1.HostPathFileOrCreate, ""},
		{"file or create has no parent", filepath.Join(dir, "c", "file"), corev1.HostPathFileOrCreate, "does not create the parent directory"},
		{"socket mismatch", file, corev1.HostPathSocket, "is not of type Socket"},
		{"char device", "/dev/null", corev1.HostPathCharDev, ""},
		{"block device mismatch", "/dev/null", corev1.HostPathBlockDev, "is not of type BlockDevice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := prepareHostPath(&corev1.HostPathVolumeSource{Path: tt.path, Type: hostPathType(tt.typ)})
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				if got != tt.path {
					t.Fatalf("path %q, want %q", got, tt.path)
				}
				if _, err := os.Stat(got); err != nil {
					t.Fatalf("prepared path: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

// An unset-type hostPath is neither checked nor created by Prepare (before
// the init containers run): containerd's CRI creates a missing mount source
// when it creates the container that mounts it (MakeMountSource).
func TestUnsetHostPathMadeAtContainerCreation(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "x", "conf")
	got, err := prepareHostPath(&corev1.HostPathVolumeSource{Path: missing})
	if err != nil || got != missing {
		t.Fatalf("prepare: %q, %v", got, err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "x")); !os.IsNotExist(err) {
		t.Fatalf("Prepare created the hostPath (or its parent): %v", err)
	}
	m := New(t.TempDir())
	must(t, m.MakeMountSource(missing))
	if fi, err := os.Stat(missing); err != nil || !fi.IsDir() {
		t.Fatalf("mount source: %v, %v", fi, err)
	}
	file := filepath.Join(dir, "file") // what an init container wrote
	must(t, os.WriteFile(file, nil, 0o644))
	must(t, m.MakeMountSource(file))
	if fi, err := os.Stat(file); err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("an existing file is kept: %v, %v", fi, err)
	}
}

func TestEmptyDirLifecycle(t *testing.T) {
	m := New(t.TempDir())
	limit := resource.MustParse("1Mi")
	pod := emptyDirPod("u1", &limit)
	ctx := context.Background()
	paths, _, err := m.Prepare(ctx, pod)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(paths["disk"])
	if err != nil || fi.Mode().Perm() != 0o777 {
		t.Fatalf("disk emptyDir: %v %v", fi, err)
	}
	if p, ok := paths["mem"]; ok {
		if mounted, _ := isMountPoint(p); !mounted {
			t.Fatalf("memory emptyDir %s is not a tmpfs mount", p)
		}
		// Prepare is idempotent: a second call must not stack mounts.
		if _, _, err := m.Prepare(ctx, pod); err != nil {
			t.Fatal(err)
		}
	}
	uids, _ := m.ListPods()
	if len(uids) != 1 || uids[0] != "u1" {
		t.Fatalf("ListPods = %v", uids)
	}
	for i := 0; i < 2; i++ { // idempotent
		if err := m.Cleanup(ctx, pod.UID); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(m.PodDir(pod.UID)); !os.IsNotExist(err) {
		t.Fatalf("pod dir still there: %v", err)
	}
	if mi, _ := os.ReadFile("/proc/self/mountinfo"); strings.Contains(string(mi), m.Root) {
		t.Fatalf("mount left behind under %s", m.Root)
	}
}

// fsGroup: an emptyDir (disk or tmpfs) belongs to the group, setgid so new
// files inherit it, other mode bits kept, as the kubelet's
// SetVolumeOwnership leaves it.
func TestEmptyDirFSGroup(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (chown, tmpfs)")
	}
	m := New(t.TempDir())
	gid := int64(2345)
	pod := &corev1.Pod{Spec: corev1.PodSpec{SecurityContext: &corev1.PodSecurityContext{FSGroup: &gid}, Volumes: []corev1.Volume{
		{Name: "disk", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: "mem", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}},
	}}}
	pod.UID = "u-fsgroup"
	mountAll(pod)
	ctx := context.Background()
	paths, _, err := m.Prepare(ctx, pod)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Cleanup(ctx, pod.UID) })
	for name, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		want := os.ModeDir | os.ModeSetgid | 0o777
		if name == "mem" {
			want |= os.ModeSticky // the tmpfs root's 1777 stays
		}
		if st.Gid != uint32(gid) || fi.Mode() != want {
			t.Errorf("%s: gid %d mode %v, want gid %d, %v", name, st.Gid, fi.Mode(), gid, want)
		}
	}
}

// mountAll gives pod a container mounting each of its volumes (Prepare
// skips volumes no container uses).
// emptyDirPod has an emptyDir "disk" and, when run as root (tmpfs), a
// medium Memory one "mem" of sizeLimit limit, both mounted by a container.
func emptyDirPod(uid types.UID, limit *resource.Quantity) *corev1.Pod {
	pod := &corev1.Pod{}
	pod.UID = uid
	pod.Spec.Volumes = []corev1.Volume{
		{Name: "disk", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: "mem", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: limit}}},
	}
	if os.Geteuid() != 0 {
		pod.Spec.Volumes = pod.Spec.Volumes[:1]
	}
	mountAll(pod)
	return pod
}

func mountAll(pod *corev1.Pod) {
	c := corev1.Container{Name: "c"}
	for _, v := range pod.Spec.Volumes {
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: v.Name, MountPath: "/" + v.Name})
	}
	pod.Spec.Containers = append(pod.Spec.Containers, c)
}

// Volumes no container uses are not prepared, as the kubelet's
// processPodVolumes ("Skipping unused volume"): a missing ConfigMap,
// Secret or typed hostPath there does not block the pod. Mounts of init
// containers (sidecars too) and volumeDevices count as uses.
func TestPrepareSkipsUnusedVolumes(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing")
	cfg := func(name string) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "missing"}}}}
	}
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		Volumes: []corev1.Volume{
			cfg("cfg"),
			{Name: "sec", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "missing"}}},
			{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: missing, Type: hostPathType(corev1.HostPathDirectory)}}},
			{Name: "init-dir", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			{Name: "app-dir", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			{Name: "dev", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: dir}}},
		},
		InitContainers: []corev1.Container{{Name: "side", VolumeMounts: []corev1.VolumeMount{{Name: "init-dir", MountPath: "/d"}}}},
		Containers: []corev1.Container{{Name: "app", VolumeMounts: []corev1.VolumeMount{{Name: "app-dir", MountPath: "/d"}},
			VolumeDevices: []corev1.VolumeDevice{{Name: "dev", DevicePath: "/dev/x"}}}},
	}}
	pod.UID = "u-unused"
	paths, warnings, err := New(t.TempDir()).Prepare(context.Background(), pod)
	if err != nil || len(warnings) > 0 {
		t.Fatalf("Prepare: %v %v", warnings, err)
	}
	got := make([]string, 0, len(paths))
	for name := range paths {
		got = append(got, name)
	}
	slices.Sort(got)
	if want := []string{"app-dir", "dev", "init-dir"}; !slices.Equal(got, want) {
		t.Errorf("prepared %q, want %q", got, want)
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Errorf("unused hostPath touched: %v", err)
	}
}

// hostDirBoundAt makes a "host" directory holding the file keep and
// bind-mounts it at target (created), as a container's Bidirectional
// mount or runc's nested mount point leaves one inside a volume; the test
// unmounts it at the end if it is still there.
func hostDirBoundAt(t *testing.T, target string) (keep string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root (bind mount)")
	}
	host := t.TempDir()
	keep = filepath.Join(host, "keep")
	must(t, os.WriteFile(keep, []byte("host data"), 0o644))
	must(t, os.MkdirAll(target, 0o755))
	must(t, unix.Mount(host, target, "", unix.MS_BIND, ""))
	t.Cleanup(func() {
		if mounted, _ := mountinfo.Mounted(target); mounted {
			_ = unix.Unmount(target, unix.MNT_DETACH)
		}
	})
	return keep
}

// A mount left nested in a pod's volume is unmounted by Cleanup, never
// deleted through: the host's files under it stay.
func TestCleanupNeverDeletesThroughAMount(t *testing.T) {
	m := New(t.TempDir())
	dir := m.PodDir("u-nested")
	keep := hostDirBoundAt(t, filepath.Join(dir, "volumes", "empty-dir", "shared", "disk"))
	must(t, os.WriteFile(filepath.Join(dir, "volumes", "empty-dir", "shared", "f"), nil, 0o644))
	if err := m.Cleanup(context.Background(), "u-nested"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(keep); err != nil {
		t.Fatalf("the host's file under the mount: %v", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("pod dir still there: %v", err)
	}
}

// removeAllOneFS removes what is on its own mount and refuses to descend
// into a mount point, even a bind mount of the same filesystem.
func TestRemoveAllOneFSRefusesMountPoints(t *testing.T) {
	tree := filepath.Join(t.TempDir(), "tree")
	target := filepath.Join(tree, "sub", "mnt")
	keep := hostDirBoundAt(t, target)
	must(t, os.WriteFile(filepath.Join(tree, "a"), nil, 0o644))
	err := removeAllOneFS(tree)
	if err == nil || !strings.Contains(err.Error(), target+": it is a mount point") {
		t.Fatalf("err = %v, want one naming the mount point %s", err, target)
	}
	if _, err := os.Stat(keep); err != nil {
		t.Fatalf("the host's file under the mount: %v", err)
	}
	if _, err := os.Stat(filepath.Join(tree, "a")); !os.IsNotExist(err) {
		t.Fatalf("a file beside the mount was kept: %v", err)
	}
	must(t, unix.Unmount(target, unix.MNT_DETACH))
	must(t, removeAllOneFS(tree))
	if _, err := os.Stat(tree); !os.IsNotExist(err) {
		t.Fatalf("tree still there: %v", err)
	}
	must(t, removeAllOneFS(tree)) // missing is success
}

// An update of a data volume removes the entries the payload no longer
// has, but never through a mount a container left in their place.
func TestWriteAtomicNeverDeletesThroughAMount(t *testing.T) {
	dir := t.TempDir()
	must(t, WriteAtomic(dir, map[string]configdata.File{"a": {Data: []byte("1"), Mode: 0o644}}, nil))
	target := filepath.Join(dir, "extra")
	keep := hostDirBoundAt(t, target)
	err := WriteAtomic(dir, map[string]configdata.File{"b": {Data: []byte("2"), Mode: 0o644}}, nil)
	if err == nil || !strings.Contains(err.Error(), target) {
		t.Fatalf("err = %v, want one naming %s", err, target)
	}
	if _, err := os.Stat(keep); err != nil {
		t.Fatalf("the host's file under the mount: %v", err)
	}
}

// A state dir reached through a symlink to another filesystem is removed
// normally: its files are on the symlink target's mount, not the link's.
func TestRemoveAllOneFSThroughSymlinkedParent(t *testing.T) {
	target, err := os.MkdirTemp("/dev/shm", "podhost-remove-")
	if err != nil {
		t.Skip("no /dev/shm:", err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(target) })
	link := filepath.Join(t.TempDir(), "pods")
	must(t, os.Symlink(target, link))
	dir := filepath.Join(link, "u1", "volumes")
	must(t, os.MkdirAll(dir, 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "f"), nil, 0o644))
	if err := removeAllOneFS(filepath.Join(link, "u1")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(target, "u1")); !os.IsNotExist(err) {
		t.Fatalf("pod dir still there: %v", err)
	}
}
