package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/containerd/containerd/v2/core/content"
	"github.com/containerd/containerd/v2/core/images"
	"github.com/containerd/containerd/v2/core/remotes"
	digest "github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/podhost/podhost/internal/model/runtimeapi"
	"github.com/podhost/podhost/internal/model/wellknown"
)

// BundleMediaType is the Sigstore bundle's media type: the artifactType of
// the referrer manifest `cosign sign --new-bundle-format` pushes, and the
// media type of its one layer.
const BundleMediaType = "application/vnd.dev.sigstore.bundle.v0.3+json"

// Bounds on what a registry or an archive can make podhost read while it
// looks for signatures.
const (
	maxReferrers     = 16        // bundle referrers read per image, and bundles kept
	maxReferrerBytes = 64 << 10  // a referrer manifest (under 1 KiB in practice)
	maxBundleBytes   = 256 << 10 // a bundle (a few KiB in practice, with a certificate chain)
	maxTotalBytes    = 2 << 20   // everything read for one image
	remoteTimeout    = time.Minute
)

// budget is what a lookup may still read.
type budget struct{ bytes int64 }

func (b *budget) take(n int64) error {
	if n > b.bytes {
		return fmt.Errorf("the signatures of one image may not exceed %d bytes", maxTotalBytes)
	}
	b.bytes -= n
	return nil
}

// SignatureBundles returns the Sigstore bundles attached to the image
// ref (normalized) at digest dgst as OCI referrers: first those in
// containerd's content store (imported with an archive, LabelSignatureFor),
// then, when remote, those the registry lists (the referrers API, or its
// sha256-<hex> tag fallback, as containerd's resolver does). A registry
// error is returned only when nothing was found locally.
func (r *Runtime) SignatureBundles(ctx context.Context, ref string, dgst digest.Digest, remote bool) ([]runtimeapi.SignatureBundle, error) {
	ctx = r.nsctx(ctx)
	b := &budget{bytes: maxTotalBytes}
	out, err := r.localBundles(ctx, dgst, b)
	if err != nil {
		return nil, err
	}
	if !remote {
		return out, nil
	}
	ctx, cancel := context.WithTimeout(ctx, remoteTimeout)
	defer cancel()
	more, err := r.remoteBundles(ctx, ref, dgst, b)
	if err != nil && len(out) == 0 {
		return nil, fmt.Errorf("none in the content store, and the registry could not be asked: %w", err)
	}
	return append(out, more...), nil
}

func (r *Runtime) localBundles(ctx context.Context, dgst digest.Digest, bud *budget) ([]runtimeapi.SignatureBundle, error) {
	imgs, err := r.client.ImageService().List(ctx, "labels."+strconv.Quote(wellknown.LabelSignatureFor)+"=="+strconv.Quote(dgst.String()))
	if err != nil {
		return nil, fmt.Errorf("signatures of %s: list: %w", dgst, err)
	}
	cs := r.client.ContentStore()
	fetch := func(ctx context.Context, d ocispec.Descriptor) (io.ReadCloser, error) {
		ra, err := cs.ReaderAt(ctx, d)
		if err != nil {
			return nil, err
		}
		return io.NopCloser(content.NewReader(ra)), nil
	}
	var out []runtimeapi.SignatureBundle
	for i, img := range imgs {
		if i == maxReferrers {
			break
		}
		b, err := referrerBundles(ctx, fetch, img.Target, dgst, "local referrer ", bud)
		if err != nil {
			r.log().Warn("image signature: local referrer unreadable", "image", img.Name, "err", err)
			continue
		}
		out = append(out, b...)
	}
	return out, nil
}

func (r *Runtime) remoteBundles(ctx context.Context, ref string, dgst digest.Digest, bud *budget) ([]runtimeapi.SignatureBundle, error) {
	f, err := r.resolver(ctx).Fetcher(ctx, ref)
	if err != nil {
		return nil, fmt.Errorf("signatures of %s: %w", ref, err)
	}
	rf, ok := f.(remotes.ReferrersFetcher)
	if !ok {
		return nil, fmt.Errorf("signatures of %s: the resolver cannot list referrers", ref)
	}
	descs, err := rf.FetchReferrers(ctx, dgst, remotes.WithReferrerArtifactTypes(BundleMediaType))
	if err != nil {
		return nil, fmt.Errorf("signatures of %s: referrers of %s: %w", ref, dgst, err)
	}
	var out []runtimeapi.SignatureBundle
	var errs []error
	for i, d := range descs {
		if i == maxReferrers {
			break
		}
		b, err := referrerBundles(ctx, f.Fetch, d, dgst, "registry referrer ", bud)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, b...)
	}
	if len(out) == 0 && len(errs) > 0 {
		return nil, fmt.Errorf("signatures of %s: %w", ref, errors.Join(errs...))
	}
	return out, nil
}

// referrerBundles reads the referrer manifest d and the bundles among its
// layers, each checked against its descriptor's digest and bounded in size.
// A manifest whose subject is not dgst yields nothing.
func referrerBundles(ctx context.Context, fetch func(context.Context, ocispec.Descriptor) (io.ReadCloser, error),
	d ocispec.Descriptor, dgst digest.Digest, source string, bud *budget) ([]runtimeapi.SignatureBundle, error) {
	if d.MediaType == "" {
		d.MediaType = ocispec.MediaTypeImageManifest
	}
	if !images.IsManifestType(d.MediaType) {
		return nil, fmt.Errorf("referrer %s: media type %s is no manifest", d.Digest, d.MediaType)
	}
	raw, err := readVerified(ctx, fetch, d, maxReferrerBytes, bud)
	if err != nil {
		return nil, fmt.Errorf("referrer %s: %w", d.Digest, err)
	}
	m, ok := bundleReferrer(raw)
	if !ok || m.Subject.Digest != dgst {
		return nil, nil
	}
	var out []runtimeapi.SignatureBundle
	for _, l := range m.Layers {
		if l.MediaType != BundleMediaType {
			continue
		}
		if len(out) == maxReferrers {
			break
		}
		data, err := readVerified(ctx, fetch, l, maxBundleBytes, bud)
		if err != nil {
			return out, fmt.Errorf("referrer %s: bundle %s: %w", d.Digest, l.Digest, err)
		}
		out = append(out, runtimeapi.SignatureBundle{Source: source + d.Digest.String(), Data: data})
	}
	return out, nil
}

// bundleReferrer parses raw as an OCI manifest with a subject that holds
// Sigstore bundles (artifactType, or a layer of the bundle type).
func bundleReferrer(raw []byte) (ocispec.Manifest, bool) {
	var m ocispec.Manifest
	if err := json.Unmarshal(raw, &m); err != nil || m.Subject == nil {
		return m, false
	}
	if m.ArtifactType == BundleMediaType {
		return m, true
	}
	for _, l := range m.Layers {
		if l.MediaType == BundleMediaType {
			return m, true
		}
	}
	return m, false
}

// readVerified reads the blob d, at most limit bytes and within the
// budget, and checks its digest.
func readVerified(ctx context.Context, fetch func(context.Context, ocispec.Descriptor) (io.ReadCloser, error), d ocispec.Descriptor, limit int64, bud *budget) ([]byte, error) {
	if d.Size > limit || d.Size < 0 {
		return nil, fmt.Errorf("size %d beyond the %d bytes allowed", d.Size, limit)
	}
	if err := bud.take(d.Size); err != nil {
		return nil, err
	}
	if err := d.Digest.Validate(); err != nil {
		return nil, err
	}
	rc, err := fetch(ctx, d)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, d.Size+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) != d.Size || d.Digest.Algorithm().FromBytes(data) != d.Digest {
		return nil, fmt.Errorf("content does not match its descriptor (%d bytes, want %d, digest %s)", len(data), d.Size, d.Digest)
	}
	return data, nil
}

// labelBundleReferrer: if the imported image target is a Sigstore bundle
// referrer, its record gets LabelSignatureFor (the subject's digest) and
// the answer is true: it is no image to unpack.
func (r *Runtime) labelBundleReferrer(ctx context.Context, img images.Image) (bool, error) {
	t := img.Target
	if !images.IsManifestType(t.MediaType) || t.Size > maxReferrerBytes {
		return false, nil
	}
	raw, err := content.ReadBlob(ctx, r.client.ContentStore(), t)
	if err != nil {
		return false, fmt.Errorf("import: %s: %w", img.Name, err)
	}
	m, ok := bundleReferrer(raw)
	if !ok {
		return false, nil
	}
	if err := m.Subject.Digest.Validate(); err != nil {
		return false, fmt.Errorf("import: %s: subject: %w", img.Name, err)
	}
	return true, r.SetImageLabels(ctx, img.Name, map[string]string{wellknown.LabelSignatureFor: m.Subject.Digest.String()})
}
