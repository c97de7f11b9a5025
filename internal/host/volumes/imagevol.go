package volumes

import (
	"context"
	"errors"
	"path/filepath"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// ImageMounter makes image volumes (Volume.image, Kubernetes 1.33): the
// daemon's, which pulls through the syncer's runtime (pull policy, image
// signature policy) and mounts with *runtime.Runtime.
type ImageMounter interface {
	// MountImage makes ref available per policy and mounts its rootfs
	// read-only at target (volume name of pod uid).
	MountImage(ctx context.Context, uid types.UID, name, ref string, policy corev1.PullPolicy, target string) error
	// RemoveImages releases what the pod's image volumes held, once they
	// are unmounted.
	RemoveImages(ctx context.Context, uid types.UID) error
}

// prepareImage mounts image volume v at <pod dir>/volumes/image/<name>
// once; later Prepares find it mounted and leave it (the image is
// resolved again only when the pod is made again, as the kubelet's).
func (m *Manager) prepareImage(ctx context.Context, pod *corev1.Pod, v *corev1.Volume) (string, error) {
	if m.Images == nil {
		return "", errors.New("image volumes are not set up")
	}
	if err := m.makeVolumesDir(pod.UID); err != nil {
		return "", err
	}
	target := filepath.Join(m.PodDir(pod.UID), "volumes", "image", v.Name)
	if mountRoot(target) {
		return target, nil
	}
	if err := m.Images.MountImage(ctx, pod.UID, v.Name, v.Image.Reference, v.Image.PullPolicy, target); err != nil {
		return "", err
	}
	return target, nil
}

// removeImages is Cleanup's last step: the image volumes' snapshots go
// once nothing of the pod is mounted.
func (m *Manager) removeImages(ctx context.Context, uid types.UID) error {
	if m.Images == nil {
		return ctx.Err()
	}
	if err := m.Images.RemoveImages(ctx, uid); err != nil {
		return err
	}
	return ctx.Err()
}

// mountRoot tells whether path is the root of a mount: its mount id is not
// its parent's (a bind mount on the same filesystem has the same device).
func mountRoot(path string) bool {
	var st, parent unix.Statx_t
	if unix.Statx(unix.AT_FDCWD, path, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_MNT_ID, &st) != nil ||
		unix.Statx(unix.AT_FDCWD, filepath.Dir(path), unix.AT_SYMLINK_NOFOLLOW, unix.STATX_MNT_ID, &parent) != nil {
		return false
	}
	return st.Mnt_id != parent.Mnt_id
}
