package volumes

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// memoryPod has one container per memory limit ("" = none).
func memoryPod(limits ...string) *corev1.Pod {
	pod := &corev1.Pod{}
	for _, l := range limits {
		c := corev1.Container{Name: "c"}
		if l != "" {
			c.Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(l)}
		}
		pod.Spec.Containers = append(pod.Spec.Containers, c)
	}
	return pod
}

func TestMemoryEmptyDirSize(t *testing.T) {
	alloc := corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("8Gi")}
	q := func(s string) *resource.Quantity { v := resource.MustParse(s); return &v }
	tests := []struct {
		name  string
		pod   *corev1.Pod
		limit *resource.Quantity
		alloc corev1.ResourceList
		want  int64
	}{
		{"node allocatable without limits", memoryPod(""), nil, alloc, 8 << 30},
		{"pod limit", memoryPod("1Gi", "512Mi"), nil, alloc, 1536 << 20},
		{"pod limit only when every container has one", memoryPod("1Gi", ""), nil, alloc, 8 << 30},
		{"sizeLimit below the pod limit", memoryPod("1Gi"), q("64Mi"), alloc, 64 << 20},
		{"sizeLimit above the pod limit", memoryPod("1Gi"), q("2Gi"), alloc, 1 << 30},
		{"sizeLimit above allocatable", memoryPod(""), q("16Gi"), alloc, 8 << 30},
		{"zero sizeLimit does not count", memoryPod(""), q("0"), alloc, 8 << 30},
		{"no allocatable known", memoryPod(""), q("64Mi"), nil, 64 << 20},
		{"nothing known: kernel default", memoryPod(""), nil, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ed := &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: tt.limit}
			if got := memoryEmptyDirSize(tt.pod, ed, tt.alloc); got != tt.want {
				t.Fatalf("size %d, want %d", got, tt.want)
			}
		})
	}
}

// A memory emptyDir is a tmpfs as the kubelet mounts it: sized by the pod's
// memory limit, no nosuid/nodev, root mode 1777.
func TestMemoryEmptyDirMount(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (tmpfs)")
	}
	m := New(t.TempDir())
	m.Allocatable = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("8Gi")}
	pod := memoryPod("4Mi")
	pod.UID = "u-mem"
	pod.Spec.Volumes = []corev1.Volume{{Name: "mem", VolumeSource: corev1.VolumeSource{
		EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}}}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "mem", MountPath: "/mem"}}
	ctx := context.Background()
	paths, _, err := m.Prepare(ctx, pod)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Cleanup(ctx, pod.UID) })
	var st unix.Statfs_t
	if err := unix.Statfs(paths["mem"], &st); err != nil {
		t.Fatal(err)
	}
	if size := int64(st.Blocks) * st.Bsize; size != 4<<20 {
		t.Errorf("tmpfs size %d, want the pod's 4Mi limit", size)
	}
	if st.Flags&(unix.ST_NOSUID|unix.ST_NODEV) != 0 {
		t.Errorf("tmpfs flags %#x: nosuid/nodev set", st.Flags)
	}
	fi, err := os.Stat(paths["mem"])
	if err != nil {
		t.Fatal(err)
	}
	if want := os.ModeDir | os.ModeSticky | 0o777; fi.Mode() != want {
		t.Errorf("tmpfs root mode %v, want %v", fi.Mode(), want)
	}
}

// An emptyDir is set up once, as the kubelet's SetUpAt with its ready
// marker: a later Prepare (the next container's start, a restart) keeps
// a tmpfs root's 1777 and a mode a container gave the volume's root.
func TestEmptyDirSetUpOnce(t *testing.T) {
	m := New(t.TempDir())
	pod := emptyDirPod("u-once", nil)
	ctx := context.Background()
	paths, _, err := m.Prepare(ctx, pod)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Cleanup(ctx, pod.UID) })
	must(t, os.Chmod(paths["disk"], 0o750)) // the container's own chmod
	for i := 0; i < 2; i++ {
		if _, _, err := m.Prepare(ctx, pod); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]os.FileMode{"disk": os.ModeDir | 0o750, "mem": os.ModeDir | os.ModeSticky | 0o777}
	for name, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != want[name] {
			t.Errorf("%s: root mode %v after later Prepares, want %v", name, fi.Mode(), want[name])
		}
	}
}

// The root, the pod dir and its volumes/ and plugins/ dirs are 0750, as the
// kubelet's: the emptyDir below them is 0777 for the container's user, and
// other host users cannot reach it.
func TestPodDirsClosedToOtherUsers(t *testing.T) {
	root := filepath.Join(t.TempDir(), "pods")
	m := New(root)
	pod := memoryPod("")
	pod.UID = "u-dirs"
	pod.Spec.Volumes = []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{
		EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "scratch", MountPath: "/s"}}
	paths, _, err := m.Prepare(context.Background(), pod)
	if err != nil {
		t.Fatal(err)
	}
	pd := m.PodDir(pod.UID)
	for path, want := range map[string]os.FileMode{
		root: 0o750, pd: 0o750, filepath.Join(pd, "volumes"): 0o750, filepath.Join(pd, "plugins"): 0o750,
		paths["scratch"]: 0o777,
	} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("%s: mode %04o, want %04o", path, got, want)
		}
	}
}
