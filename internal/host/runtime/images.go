package runtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/images/archive"
	"github.com/containerd/containerd/v2/pkg/archive/compression"
	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
	digest "github.com/opencontainers/go-digest"

	"github.com/podhost/podhost/internal/model/runtimeapi"
	"github.com/podhost/podhost/internal/model/wellknown"
	corev1 "k8s.io/api/core/v1"
)

// Image is an image available in the namespace, unpacked (runtimeapi.Image).
type Image = runtimeapi.Image

// NormalizeRef returns the fully qualified form of ref
// ("busybox" -> "docker.io/library/busybox:latest").
func NormalizeRef(ref string) (string, error) {
	named, err := reference.ParseDockerRef(ref)
	if err != nil {
		return "", fmt.Errorf("%w: %q: %w", ErrInvalidImageName, ref, err)
	}
	return named.String(), nil
}

// EnsureImage makes ref available per pull policy, like the kubelet: Never
// fails with ErrImageNeverPull when absent; IfNotPresent (and "") pulls
// only when absent; Always pulls every time and fails with ErrImagePull if
// that fails, even when an older copy is present.
func (r *Runtime) EnsureImage(ctx context.Context, ref string, policy corev1.PullPolicy) (Image, error) {
	ctx = r.nsctx(ctx)
	name, err := NormalizeRef(ref)
	if err != nil {
		return Image{}, err
	}
	if policy != corev1.PullAlways {
		img, err := r.client.GetImage(ctx, name)
		switch {
		case err == nil:
			return r.readyImage(ctx, img) // a lease only if it must unpack
		case !errdefs.IsNotFound(err):
			return Image{}, fmt.Errorf("image %s: %w", name, err)
		case policy == corev1.PullNever:
			return Image{}, fmt.Errorf("%w: %s", ErrImageNeverPull, name)
		}
	}
	var d Image
	runtimeapi.PullStarted(ctx)
	err = r.withLease(ctx, func(ctx context.Context) error {
		img, err := r.pull(ctx, name)
		if err != nil {
			return err
		}
		d, err = r.readyImage(ctx, img)
		return err
	})
	d.Pulled = err == nil
	return d, err
}

// readyImage makes sure img is unpacked and returns its description. Images
// already seen unpacked (by manifest digest and snapshotter) are answered
// from memory: checking the snapshot chain and reading the config blob for
// every container start is what made starting many pods at once slow. The
// first asks for an image (every pod of a cold start at once) share one
// check.
func (r *Runtime) readyImage(ctx context.Context, img client.Image) (Image, error) {
	if d, ok := r.cachedImage(img); ok {
		return d, nil
	}
	key := img.Target().Digest.String() + "|" + r.snapshotter("")
	ch := r.describing.DoChan(key, func() (any, error) {
		// Not cancelled with the caller that started it: the others wait
		// for it too (an unpack goes on to its end, bounded).
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), describeTimeout)
		defer cancel()
		if err := r.unpack(ctx, img, ""); err != nil {
			return Image{}, err
		}
		d, err := describe(ctx, img)
		if err != nil {
			return Image{}, err
		}
		r.images.Store(key, d)
		return d, nil
	})
	select {
	case <-ctx.Done():
		return Image{}, ctx.Err()
	case res := <-ch:
		if res.Err != nil {
			return Image{}, res.Err
		}
		d := res.Val.(Image)
		d.Ref = img.Name() // callers sharing the check may name the image differently
		return d, nil
	}
}

// describeTimeout bounds a shared unpack-and-describe that every caller
// gave up on.
const describeTimeout = 10 * time.Minute

func (r *Runtime) cachedImage(img client.Image) (Image, bool) {
	v, ok := r.images.Load(img.Target().Digest.String() + "|" + r.snapshotter(""))
	if !ok {
		return Image{}, false
	}
	d := v.(Image)
	d.Ref = img.Name()
	return d, true
}

func (r *Runtime) pull(ctx context.Context, name string) (client.Image, error) {
	r.log().Info("pulling image", "image", name)
	img, err := r.client.Pull(ctx, name,
		client.WithPullUnpack,
		client.WithPullSnapshotter(r.snapshotter("")),
		client.WithResolver(r.resolver(ctx)),
	)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrImagePull, name, err)
	}
	return img, nil
}

// unpack makes sure img is unpacked into the snapshotter.
func (r *Runtime) unpack(ctx context.Context, img client.Image, snapshotter string) error {
	sn := r.snapshotter(snapshotter)
	ok, err := img.IsUnpacked(ctx, sn)
	if err != nil {
		return fmt.Errorf("image %s: check unpacked: %w", img.Name(), err)
	}
	if ok {
		return nil
	}
	// The new snapshots are held by a lease until the image's GC labels
	// reference them (a pull's own lease when called from one).
	if err := r.withLease(ctx, func(ctx context.Context) error { return img.Unpack(ctx, sn) }); err != nil {
		return fmt.Errorf("image %s: unpack into %s: %w", img.Name(), sn, err)
	}
	return nil
}

func describe(ctx context.Context, img client.Image) (Image, error) {
	spec, err := img.Spec(ctx)
	if err != nil {
		return Image{}, fmt.Errorf("image %s: config: %w", img.Name(), err)
	}
	size, err := img.Size(ctx)
	if err != nil {
		return Image{}, fmt.Errorf("image %s: size: %w", img.Name(), err)
	}
	return Image{Ref: img.Name(), Digest: img.Target().Digest.String(), Config: spec.Config, Size: size,
		LastUsed: lastUsed(img.Metadata()), Pinned: img.Labels()[wellknown.LabelImagePinned]}, nil
}

// ImportImage imports an OCI layout or `docker save` tar (plain, gzip or
// zstd) and unpacks the images. Tag-only OCI ref names ("1.0") and unnamed
// manifests are named import@<digest>.
func (r *Runtime) ImportImage(ctx context.Context, in io.Reader) ([]Image, error) {
	return r.ImportArchive(ctx, in, ImportOptions{})
}

// ImportOptions adjust ImportArchive.
type ImportOptions struct {
	// Labels are set on every image imported (replacing the image's
	// labels, as client.WithImageLabels does).
	Labels map[string]string
	// Keep, if set, decides whether the archive may name an image ref
	// (normalized); a ref it refuses is not created or updated.
	Keep func(ref string) bool
}

// ImportArchive is ImportImage with options (the images directory).
func (r *Runtime) ImportArchive(ctx context.Context, in io.Reader, opts ImportOptions) ([]Image, error) {
	ctx = r.nsctx(ctx)
	dec, err := compression.DecompressStream(in)
	if err != nil {
		return nil, fmt.Errorf("import: %w", err)
	}
	defer dec.Close()
	var out []Image
	err = r.withLease(ctx, func(ctx context.Context) (err error) {
		out, err = r.importImage(ctx, dec, opts)
		return err
	})
	return out, err
}

func (r *Runtime) importImage(ctx context.Context, in io.Reader, opts ImportOptions) ([]Image, error) {
	refName := importRefName
	digestRef := archive.DigestTranslator("import")
	if opts.Keep != nil {
		refName = func(ref string) string {
			if n := importRefName(ref); n != "" && opts.Keep(n) {
				return n
			}
			return ""
		}
		digestRef = func(d digest.Digest) string {
			if n := archive.DigestTranslator("import")(d); opts.Keep(n) {
				return n
			}
			return ""
		}
	}
	iopts := []client.ImportOpt{
		client.WithImageRefTranslator(refName),
		client.WithDigestRef(digestRef),
		client.WithSkipDigestRef(func(name string) bool { return name != "" }),
	}
	if opts.Labels != nil {
		iopts = append(iopts, client.WithImageLabels(opts.Labels))
	}
	imgs, err := r.client.Import(ctx, in, iopts...)
	if err != nil {
		return nil, fmt.Errorf("import: %w", err)
	}
	out := make([]Image, 0, len(imgs))
	for _, m := range imgs {
		if sig, err := r.labelBundleReferrer(ctx, m); err != nil || sig {
			if err != nil {
				return nil, err
			}
			out = append(out, Image{Ref: m.Name, Digest: m.Target.Digest.String(), Size: m.Target.Size})
			continue // a signature, kept for verification: nothing to unpack
		}
		img := client.NewImage(r.client, m)
		if err := r.unpack(ctx, img, ""); err != nil {
			return nil, fmt.Errorf("import: %w", err)
		}
		d, err := describe(ctx, img)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// importRefName normalizes full names from an OCI layout's ref annotation
// and drops tag-only ones.
func importRefName(ref string) string {
	if !strings.ContainsAny(ref, "/:@") {
		return ""
	}
	name, err := NormalizeRef(ref)
	if err != nil {
		return ""
	}
	return name
}

// ListImages lists the namespace's images.
func (r *Runtime) ListImages(ctx context.Context) ([]Image, error) {
	ctx = r.nsctx(ctx)
	imgs, err := r.client.ListImages(ctx)
	if err != nil {
		return nil, fmt.Errorf("list images: %w", err)
	}
	out := make([]Image, 0, len(imgs))
	for _, img := range imgs {
		d, err := describe(ctx, img)
		if errors.Is(err, errdefs.ErrNotFound) {
			continue // e.g. another platform only, or content gone
		}
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}
