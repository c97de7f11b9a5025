package runtime

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/images"
	"github.com/containerd/errdefs"

	"github.com/podhost/podhost/internal/model/wellknown"
)

// touchInterval bounds how often the label is rewritten: GC orders by
// minutes at best, a write per container create would be wasted.
const touchInterval = time.Minute

// touchImage records that a container was just created from img (best
// effort: a failure only makes GC's order less exact).
func (r *Runtime) touchImage(ctx context.Context, img client.Image) {
	now := time.Now()
	if t := lastUsed(img.Metadata()); now.Sub(t) < touchInterval || !r.claimTouch(img.Name(), now) {
		return
	}
	m := img.Metadata()
	m.Labels = map[string]string{wellknown.LabelImageLastUsed: now.UTC().Format(time.RFC3339)}
	if _, err := r.client.ImageService().Update(ctx, m, "labels."+wellknown.LabelImageLastUsed); err != nil {
		r.log().Debug("record image use", "image", img.Name(), "err", err)
	}
}

// claimTouch reports whether this create writes the image's label: not if
// another create of this process did within touchInterval. The creates of
// a cold start all read the image before any label write lands; each of
// them wrote it, every write one more commit in containerd's metadata db.
func (r *Runtime) claimTouch(name string, now time.Time) bool {
	prev, loaded := r.touched.LoadOrStore(name, now)
	if !loaded {
		return true
	}
	return now.Sub(prev.(time.Time)) >= touchInterval && r.touched.CompareAndSwap(name, prev, now)
}

// lastUsed is the image's last use: its label, else its last update
// (pull, import or tag).
func lastUsed(m images.Image) time.Time {
	if t, err := time.Parse(time.RFC3339, m.Labels[wellknown.LabelImageLastUsed]); err == nil {
		return t
	}
	return m.UpdatedAt
}

// RemoveImage deletes the image named ref (normalized) and waits for
// containerd's garbage collection, so the space is free on return. Its
// snapshots and blobs go unless another image or a container holds them.
func (r *Runtime) RemoveImage(ctx context.Context, ref string) error {
	ctx = r.nsctx(ctx)
	name, err := NormalizeRef(ref)
	if err != nil {
		name = ref // e.g. import@sha256:...: remove by its exact name
	}
	img, err := r.client.ImageService().Get(ctx, name)
	if err != nil {
		return fmt.Errorf("remove image %s: %w", name, err)
	}
	if err := r.client.ImageService().Delete(ctx, name, images.SynchronousDelete()); err != nil {
		if errdefs.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("remove image %s: %w", name, err)
	}
	prefix := img.Target.Digest.String() + "|"
	r.images.Range(func(k, _ any) bool {
		if strings.HasPrefix(k.(string), prefix) {
			r.images.Delete(k) // unpacked state must be checked again
		}
		return true
	})
	r.log().Info("removed image", "image", name)
	return nil
}
