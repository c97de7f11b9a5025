package runtime

import (
	"context"
	"fmt"
	"strconv"

	"github.com/containerd/containerd/v2/core/images"
	"github.com/containerd/errdefs"

	"github.com/podhost/podhost/internal/model/wellknown"
)

// PinnedImage is an image record with a podhost.io/pinned label, as the
// metadata store has it (nothing is read from the content store).
type PinnedImage struct {
	Ref, Digest string
	Labels      map[string]string
	// Present: the image's target manifest is in the content store.
	Present bool
}

// PinnedImages lists the images carrying the podhost.io/pinned label: one
// metadata list, and a content Info per image.
func (r *Runtime) PinnedImages(ctx context.Context) ([]PinnedImage, error) {
	ctx = r.nsctx(ctx)
	imgs, err := r.client.ImageService().List(ctx, "labels."+strconv.Quote(wellknown.LabelImagePinned))
	if err != nil {
		return nil, fmt.Errorf("list pinned images: %w", err)
	}
	out := make([]PinnedImage, 0, len(imgs))
	for _, img := range imgs {
		_, err := r.client.ContentStore().Info(ctx, img.Target.Digest)
		if err != nil && !errdefs.IsNotFound(err) {
			return nil, fmt.Errorf("pinned image %s: %w", img.Name, err)
		}
		out = append(out, PinnedImage{Ref: img.Name, Digest: img.Target.Digest.String(), Labels: img.Labels, Present: err == nil})
	}
	return out, nil
}

// SetImageLabels sets the labels of the image named ref; an empty value
// removes the label. A missing image is not an error.
func (r *Runtime) SetImageLabels(ctx context.Context, ref string, labels map[string]string) error {
	ctx = r.nsctx(ctx)
	img := images.Image{Name: ref, Labels: labels}
	paths := make([]string, 0, len(labels))
	for k := range labels {
		paths = append(paths, "labels."+k)
	}
	if _, err := r.client.ImageService().Update(ctx, img, paths...); err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("label image %s: %w", ref, err)
	}
	return nil
}
