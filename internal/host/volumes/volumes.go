// Package volumes prepares a pod's volumes on the host before its containers
// start, and removes them when the pod is gone.
//
//   - hostPath: checked against its declared type (DirectoryOrCreate creates a
//     0755 directory, FileOrCreate an empty 0644 file but, as the kubelet,
//     not its parent directory; Directory, File, Socket, CharDevice and
//     BlockDevice must already exist with that type). Without a type,
//     nothing is checked or created here: a missing path becomes a 0755
//     directory when a container that mounts it is created
//     (MakeMountSource, called from the spec as containerd's CRI plugin
//     creates any missing mount source: WithMounts).
//   - configMap, secret: the keys of a ConfigMap or Secret of the manifest
//     dir, written with the kubelet's atomic layout (WriteAtomic) into
//     <root>/<pod uid>/volumes/configmap/<name> or .../secret/<name>; a
//     secret volume is a tmpfs, so Secret values never reach the disk.
//     Refresh rewrites them when the object changes while the pod runs.
//   - downwardAPI, projected (configMap, secret, downwardAPI sources): the
//     same layout, on a tmpfs.
//   - emptyDir: a directory <root>/<pod uid>/volumes/empty-dir/<name> (mode
//     0777, as the kubelet makes it, under the 0750 pod and volumes dirs). medium: Memory mounts a tmpfs there
//     (root 1777, no mount flags), sized as the kubelet does: the smallest of
//     node allocatable memory, the pod's memory limit and sizeLimit. Set up
//     once (ready marker <root>/<pod uid>/plugins/empty-dir/<name>/ready, as
//     the kubelet's), then left alone by later Prepares.
//
// Everything a pod gets lives under <root>/<pod uid>, so Cleanup(uid) and
// ListPods find it again after a crash or reboot. Cleanup never deletes
// through a mount (one a container propagated into a volume included): it
// unmounts all of them first and removes one filesystem only.
package volumes

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/host/cgroups"
	"github.com/podhost/podhost/internal/host/fsquota"
)

// Manager prepares and removes pod volumes under Root (e.g. /var/lib/podhost/pods).
type Manager struct {
	Root string
	// Data finds the ConfigMaps and Secrets of a pod's configMap, secret
	// and projected volumes, those of its own source's scope
	// (*configdata.Store); nil: none exist.
	Data PodData
	// Allocatable is the node's allocatable resources: what downwardAPI
	// resourceFieldRef limits report for containers without a limit.
	Allocatable corev1.ResourceList
	// Images mounts image volumes (imagevol.go); nil: they fail.
	Images ImageMounter
	// Quotas gives a disk emptyDir a project ID to be measured by, when
	// it is set up, and releases them once the pod's directory is gone
	// (*fsquota.Manager); nil: none.
	Quotas Quotas
}

// Quotas assigns and releases emptyDirs' project IDs (*fsquota.Manager).
type Quotas interface {
	Assign(pod *corev1.Pod, volume, dir string) fsquota.Method
	Release(uid types.UID) error
}

// New returns a Manager rooted at root.
func New(root string) *Manager { return &Manager{Root: root} }

// PodDir is where everything of one pod lives.
func (m *Manager) PodDir(uid types.UID) string { return filepath.Join(m.Root, string(uid)) }

// EmptyDir is the host directory of the pod's emptyDir volume name (the
// eviction manager measures it against its sizeLimit).
func (m *Manager) EmptyDir(uid types.UID, name string) string {
	return filepath.Join(m.PodDir(uid), "volumes", "empty-dir", name)
}

// dirMode is the mode of Root, the pod dirs and their volumes/ and
// plugins/ dirs: the kubelet's 0750 (internal/host/statedir). They are what
// keeps other local users out of the volumes, whose own modes are those
// the containers need (emptyDir 0777, Secret files 0644, termination logs
// 0666).
const dirMode = 0o750

// makeVolumesDir makes <pod dir>/volumes, and the dirs above it, dirMode,
// before a volume's dir is made below it with a mode of its own.
func (m *Manager) makeVolumesDir(uid types.UID) error {
	if err := os.MkdirAll(filepath.Join(m.PodDir(uid), "volumes"), dirMode); err != nil {
		return fmt.Errorf("pod volumes dir: %w", err)
	}
	return nil
}

// Prepare makes every volume a container of pod uses usable and returns
// volume name → host path. Volumes no container uses are skipped, as the
// kubelet's processPodVolumes ("Skipping unused volume"): a missing
// ConfigMap, Secret or hostPath they name does not hold the pod. A data
// volume (configMap, secret, downwardAPI, projected) that was populated
// once and cannot be rebuilt now (its ConfigMap, Secret or key went away)
// keeps its last contents, as a kubelet volume stays mounted when its
// periodic remount fails: it is usable, and warnings holds the FailedMount
// message the kubelet records for it ("MountVolume.SetUp failed for volume …").
func (m *Manager) Prepare(ctx context.Context, pod *corev1.Pod) (paths map[string]string, warnings []error, err error) {
	used := UsedVolumes(pod)
	paths = make(map[string]string, len(used))
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		if !used[v.Name] {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		p, err := m.prepareVolume(ctx, pod, v)
		if err != nil && m.populated(pod, v) {
			warnings = append(warnings, fmt.Errorf("MountVolume.SetUp failed for volume %q : %w", v.Name, err))
			p, err = m.dataDir(pod, v), nil
		}
		if err != nil {
			return nil, nil, fmt.Errorf("spec.volumes[%d] (%s): %w", i, v.Name, err)
		}
		paths[v.Name] = p
	}
	return paths, warnings, nil
}

func (m *Manager) prepareVolume(ctx context.Context, pod *corev1.Pod, v *corev1.Volume) (string, error) {
	switch {
	case v.Image != nil:
		return m.prepareImage(ctx, pod, v)
	case v.HostPath != nil:
		return prepareHostPath(v.HostPath)
	case v.EmptyDir != nil:
		return m.prepareEmptyDir(pod, v.Name, v.EmptyDir)
	case IsDataVolume(v):
		return m.prepareData(pod, v)
	}
	return "", errors.New("volume type not supported by podhost")
}

// UsedVolumes returns the names of the volumes some container of pod uses:
// the volumeMounts and volumeDevices of its init containers (native
// sidecars included), app containers and ephemeral containers, as the
// kubelet's GetPodVolumeNames.
func UsedVolumes(pod *corev1.Pod) map[string]bool {
	used := map[string]bool{}
	add := func(mounts []corev1.VolumeMount, devices []corev1.VolumeDevice) {
		for _, vm := range mounts {
			used[vm.Name] = true
		}
		for _, vd := range devices {
			used[vd.Name] = true
		}
	}
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			add(cs[i].VolumeMounts, cs[i].VolumeDevices)
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		ec := &pod.Spec.EphemeralContainers[i]
		add(ec.VolumeMounts, ec.VolumeDevices)
	}
	return used
}

func prepareHostPath(hp *corev1.HostPathVolumeSource) (string, error) {
	t := corev1.HostPathUnset
	if hp.Type != nil {
		t = *hp.Type
	}
	p := filepath.Clean(hp.Path)
	switch t {
	case corev1.HostPathUnset:
		// No check, nothing created here: containerd's CRI WithMounts
		// creates a missing mount source when it creates the container
		// that mounts it (MakeMountSource), after the init containers ran.
	case corev1.HostPathDirectoryOrCreate:
		if err := os.MkdirAll(p, 0o755); err != nil {
			return "", fmt.Errorf("hostPath %s: %w", p, err)
		}
	case corev1.HostPathFileOrCreate:
		// The kubelet's makeFile: the file only, never its parent directory.
		f, err := os.OpenFile(p, os.O_CREATE|os.O_RDONLY, 0o644)
		if errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("hostPath %s (type FileOrCreate, which does not create the parent directory): %w", p, err)
		}
		if err != nil {
			return "", fmt.Errorf("hostPath %s: %w", p, err)
		}
		f.Close()
	}
	return p, checkType(p, t)
}

// MakeMountSource creates path as a 0755 directory (parents too) if it
// does not exist, as containerd's CRI plugin does for every mount source
// when it creates a container (WithMounts): an unset-type hostPath is
// created when the first container that mounts it is, so an init container
// can still make it a file through a parent hostPath.
func (m *Manager) MakeMountSource(path string) error {
	_, err := os.Stat(path)
	if err == nil {
		return nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("failed to stat %q: %w", path, err)
	}
	if err := os.MkdirAll(path, 0o755); err != nil {
		return fmt.Errorf("failed to mkdir %q: %w", path, err)
	}
	return nil
}

// checkType verifies that p has the kind of file the hostPath type demands.
func checkType(p string, t corev1.HostPathType) error {
	if t == corev1.HostPathUnset {
		return nil
	}
	fi, err := os.Stat(p)
	if err != nil {
		return fmt.Errorf("hostPath %s (type %s): %w", p, t, err)
	}
	mode := fi.Mode()
	ok := map[corev1.HostPathType]bool{
		corev1.HostPathDirectoryOrCreate: mode.IsDir(),
		corev1.HostPathDirectory:         mode.IsDir(),
		corev1.HostPathFileOrCreate:      mode.IsRegular(),
		corev1.HostPathFile:              mode.IsRegular(),
		corev1.HostPathSocket:            mode&fs.ModeSocket != 0,
		corev1.HostPathCharDev:           mode&fs.ModeCharDevice != 0,
		corev1.HostPathBlockDev:          mode&fs.ModeDevice != 0 && mode&fs.ModeCharDevice == 0,
	}[t]
	if !ok {
		return fmt.Errorf("hostPath %s is not of type %s", p, t)
	}
	return nil
}

// prepareEmptyDir sets an emptyDir up once, as the kubelet's emptyDir
// SetUpAt: a volume whose ready marker exists (and, for medium Memory,
// whose tmpfs is mounted) is left alone, so a later container start or
// restart never resets a mode or owner a container changed. Setting up
// makes the directory 0777 (chmod only when it differs: setupDir), mounts
// the tmpfs (medium Memory; the kubelet's setupTmpfs: no flags, no mode,
// the root is 1777) or gives a disk one its project ID (Quotas, as the
// kubelet's assignQuota), applies fsGroup, then writes the marker.
func (m *Manager) prepareEmptyDir(pod *corev1.Pod, name string, ed *corev1.EmptyDirVolumeSource) (string, error) {
	dir := m.EmptyDir(pod.UID, name)
	ready := filepath.Join(m.PodDir(pod.UID), "plugins", "empty-dir", name, "ready")
	memory := ed.Medium == corev1.StorageMediumMemory
	if done, err := emptyDirReady(dir, ready, memory); err != nil || done {
		return dir, err
	}
	if err := m.makeVolumesDir(pod.UID); err != nil {
		return "", err
	}
	if err := setupDir(dir); err != nil {
		return "", err
	}
	if memory {
		if err := m.mountMemoryEmptyDir(pod, dir, ed); err != nil {
			return "", err
		}
	} else if m.Quotas != nil {
		m.Quotas.Assign(pod, name, dir) // before any container: every file below carries the ID
	}
	if err := setOwnership(dir, fsGroup(pod)); err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(ready), dirMode); err != nil {
		return "", fmt.Errorf("emptyDir ready marker: %w", err)
	}
	if err := os.WriteFile(ready, nil, 0o600); err != nil {
		return "", fmt.Errorf("emptyDir ready marker: %w", err)
	}
	return dir, nil
}

// emptyDirReady reports whether the emptyDir at dir was set up already:
// its ready marker exists and so does dir (a tmpfs mount for medium
// Memory), as the kubelet's volumeutil.IsReady check.
func emptyDirReady(dir, ready string, memory bool) (bool, error) {
	if _, err := os.Stat(ready); errors.Is(err, fs.ErrNotExist) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	if memory {
		mounted, err := isMountPoint(dir)
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		return mounted, err
	}
	_, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// setupDir makes dir a 0777 directory, chmodding it only when its mode
// differs (the kubelet's setupDir: the umask).
func setupDir(dir string) error {
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return err
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if fi.Mode().Perm() != 0o777 {
		return os.Chmod(dir, 0o777)
	}
	return nil
}

// mountMemoryEmptyDir mounts the tmpfs of a medium Memory emptyDir at dir
// unless one is mounted there already.
func (m *Manager) mountMemoryEmptyDir(pod *corev1.Pod, dir string, ed *corev1.EmptyDirVolumeSource) error {
	if mounted, err := isMountPoint(dir); err != nil || mounted {
		return err
	}
	opts := ""
	if size := memoryEmptyDirSize(pod, ed, m.Allocatable); size > 0 {
		opts = "size=" + strconv.FormatInt(size, 10)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, opts); err != nil {
		return fmt.Errorf("mount tmpfs on %s: %w", dir, err)
	}
	return nil
}

// memoryEmptyDirSize is the size of a medium Memory emptyDir's tmpfs, the
// kubelet's calculateEmptyDirMemorySize (SizeMemoryBackedVolumes): the
// smallest of the node's allocatable memory, the pod's memory limit (set
// only when every container has one, as for the pod cgroup:
// cgroups.PodResources) and sizeLimit, counting only values above 0. 0
// leaves the kernel's default, half the RAM.
func memoryEmptyDirSize(pod *corev1.Pod, ed *corev1.EmptyDirVolumeSource, allocatable corev1.ResourceList) int64 {
	size := allocatable.Memory().Value()
	for _, v := range []int64{cgroups.PodResources(pod).MemoryLimit, sizeLimit(ed)} {
		if v > 0 && (size <= 0 || v <= size) {
			size = v
		}
	}
	return size
}

func sizeLimit(ed *corev1.EmptyDirVolumeSource) int64 {
	if ed.SizeLimit == nil {
		return 0
	}
	return ed.SizeLimit.Value()
}

func fsGroup(pod *corev1.Pod) *int64 {
	if sc := pod.Spec.SecurityContext; sc != nil {
		return sc.FSGroup
	}
	return nil
}

// setOwnership gives an emptyDir to the pod's fsGroup as the kubelet's
// SetVolumeOwnership does: group fsGroup, setgid so that new files inherit
// it, group read-write, the other mode bits kept (a tmpfs root's sticky
// bit). A new emptyDir holds nothing else, so fsGroupChangePolicy (Always /
// OnRootMismatch) makes no difference.
func setOwnership(dir string, gid *int64) error {
	if gid == nil {
		return nil
	}
	if err := os.Lchown(dir, -1, int(*gid)); err != nil {
		return fmt.Errorf("fsGroup: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("fsGroup: %w", err)
	}
	if err := os.Chmod(dir, fi.Mode()|0o770|os.ModeSetgid); err != nil {
		return fmt.Errorf("fsGroup: %w", err)
	}
	return nil
}

// isMountPoint reports whether dir is a mount point (its device differs from
// its parent's).
func isMountPoint(dir string) (bool, error) {
	var st, parent unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		return false, err
	}
	if err := unix.Lstat(filepath.Dir(dir), &parent); err != nil {
		return false, err
	}
	return st.Dev != parent.Dev, nil
}

// Cleanup unmounts every mount under the pod's directory (the tmpfs of its
// volumes, its subPath bind mounts, and any a container propagated into a
// volume) and then removes the directory without ever crossing into another
// mount. A mount it cannot unmount stays, and so does everything else: the
// error names it, and housekeeping retries. Missing is success. The
// emptyDirs' project IDs are released once the directory is gone.
func (m *Manager) Cleanup(ctx context.Context, uid types.UID) error {
	dir := m.PodDir(uid)
	if _, err := os.Lstat(dir); !errors.Is(err, fs.ErrNotExist) {
		if err := unmountUnder(dir); err != nil {
			return err
		}
		if err := removeAllOneFS(dir); err != nil {
			return fmt.Errorf("remove %s: %w", dir, err)
		}
	}
	if m.Quotas != nil {
		if err := m.Quotas.Release(uid); err != nil {
			return err
		}
	}
	return m.removeImages(ctx, uid)
}

// ListPods returns the UIDs that have a directory under Root.
func (m *Manager) ListPods() ([]types.UID, error) {
	entries, err := os.ReadDir(m.Root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []types.UID
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, types.UID(e.Name()))
		}
	}
	return out, nil
}
