package runtime

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/containerd/containerd/v2/core/leases"
	"github.com/containerd/containerd/v2/core/mount"
	"github.com/containerd/errdefs"
	"github.com/opencontainers/image-spec/identity"
	"golang.org/x/sys/unix"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/model/wellknown"
)

// imageVolumeLease is the lease holding pod uid's image volume snapshots.
func imageVolumeLease(uid types.UID) string { return "podhost-image-volumes-" + string(uid) }

// MountImageVolume mounts the rootfs of img (made available by
// EnsureImage, per the volume's pull policy) read-only, noexec, nosuid and
// nodev at target: volume name of pod uid, as containerd's CRI image
// volumes (Kubernetes 1.33) do: a snapshot of the image's layers in the
// runtime's snapshotter, held by a lease of the pod's
// (RemoveImageVolumes), mounted on the host and bind-mounted into the
// containers. A target already mounted is left as it is.
func (r *Runtime) MountImageVolume(ctx context.Context, uid types.UID, name string, img Image, target string) error {
	ctx = r.nsctx(ctx)
	lease := imageVolumeLease(uid)
	_, err := r.client.LeasesService().Create(ctx, leases.WithID(lease),
		leases.WithLabels(map[string]string{wellknown.LabelImageVolumes: string(uid)}))
	if err != nil && !errdefs.IsAlreadyExists(err) {
		return fmt.Errorf("image volume %s: lease: %w", name, err)
	}
	ctx = leases.WithLease(ctx, lease)
	ci, err := r.client.GetImage(ctx, img.Ref)
	if err != nil {
		return fmt.Errorf("image volume %s: image %s: %w", name, img.Ref, err)
	}
	diffIDs, err := ci.RootFS(ctx)
	if err != nil {
		return fmt.Errorf("image volume %s: layers of %s: %w", name, img.Ref, err)
	}
	sn := r.client.SnapshotService(r.snapshotter(""))
	key := lease + "-" + name
	mounts, err := sn.View(ctx, key, identity.ChainID(diffIDs).String())
	if errdefs.IsAlreadyExists(err) {
		mounts, err = sn.Mounts(ctx, key)
	}
	if err != nil {
		return fmt.Errorf("image volume %s: snapshot of %s: %w", name, img.Ref, err)
	}
	if err := os.MkdirAll(target, 0o755); err != nil {
		return fmt.Errorf("image volume %s: %w", name, err)
	}
	if err := mount.All(mounts, target); err != nil {
		return fmt.Errorf("image volume %s: mount %s: %w", name, img.Ref, err)
	}
	const flags = unix.MS_REMOUNT | unix.MS_BIND | unix.MS_RDONLY | unix.MS_NOEXEC | unix.MS_NOSUID | unix.MS_NODEV
	if err := unix.Mount("", target, "", flags, ""); err != nil {
		return errors.Join(fmt.Errorf("image volume %s: remount read-only: %w", name, err), mount.UnmountAll(target, unix.MNT_DETACH))
	}
	return nil
}

// RemoveImageVolumes drops the lease of pod uid's image volumes, and with
// it their snapshots (containerd's GC), once the volumes are unmounted
// (internal/host/volumes' Cleanup). None: nil.
func (r *Runtime) RemoveImageVolumes(ctx context.Context, uid types.UID) error {
	ctx = r.nsctx(ctx)
	err := r.client.LeasesService().Delete(ctx, leases.Lease{ID: imageVolumeLease(uid)}, leases.SynchronousDelete)
	if err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("image volumes of pod %s: delete lease: %w", uid, err)
	}
	return nil
}
