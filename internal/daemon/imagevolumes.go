package daemon

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/host/runtime"
	"github.com/podhost/podhost/internal/kubelet/syncer"
)

// imageVolumes is volumes.ImageMounter: the image comes through the
// syncer's runtime (pull policy, metrics and the image signature policy,
// as a container's image), the mount from containerd's snapshotter.
type imageVolumes struct {
	images syncer.Runtime
	rt     *runtime.Runtime
}

func (v imageVolumes) MountImage(ctx context.Context, uid types.UID, name, ref string, policy corev1.PullPolicy, target string) error {
	img, err := v.images.EnsureImage(ctx, ref, policy)
	if err != nil {
		return fmt.Errorf("image volume %s: %w", name, err)
	}
	return v.rt.MountImageVolume(ctx, uid, name, img, target)
}

func (v imageVolumes) RemoveImages(ctx context.Context, uid types.UID) error {
	return v.rt.RemoveImageVolumes(ctx, uid)
}
