package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/containerd/containerd/v2/core/content"
	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
	digest "github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// Blob is content to push: its descriptor and its bytes.
type Blob struct {
	Desc ocispec.Descriptor
	Data []byte
}

// NewBlob describes data as a blob of mediaType.
func NewBlob(mediaType string, data []byte) Blob {
	return Blob{Desc: ocispec.Descriptor{MediaType: mediaType, Digest: digest.FromBytes(data), Size: int64(len(data))}, Data: data}
}

// PushArtifact pushes blobs (a manifest's config and layers: those the
// registry has already are skipped), then man as ref (a tag, or a
// digest reference), through the hosts dir and the auth files as a pull
// does. It returns the manifest's digest.
func (g Registry) PushArtifact(ctx context.Context, ref string, man Blob, blobs []Blob) (string, error) {
	named, err := reference.ParseNamed(ref)
	if err != nil {
		return "", fmt.Errorf("push %s: %w", ref, err)
	}
	pusher, err := g.resolver(ctx).Pusher(ctx, named.String())
	if err != nil {
		return "", fmt.Errorf("push %s: %w", ref, err)
	}
	for _, b := range append(blobs, man) {
		if err := pushBlob(ctx, pusher.Push, b); err != nil {
			return "", fmt.Errorf("push %s: %s %s: %w", ref, b.Desc.MediaType, b.Desc.Digest, err)
		}
	}
	return man.Desc.Digest.String(), nil
}

func pushBlob(ctx context.Context, push func(context.Context, ocispec.Descriptor) (content.Writer, error), b Blob) error {
	if b.Desc.Size != int64(len(b.Data)) || b.Desc.Digest != digest.FromBytes(b.Data) {
		return errors.New("content does not match its descriptor")
	}
	w, err := push(ctx, b.Desc)
	if errdefs.IsAlreadyExists(err) {
		return nil
	}
	if err != nil {
		return err
	}
	defer w.Close()
	if _, err := io.Copy(w, bytes.NewReader(b.Data)); err != nil {
		return err
	}
	if err := w.Commit(ctx, b.Desc.Size, b.Desc.Digest); err != nil && !errdefs.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// maxReferrersIndex bounds the referrers tag schema's index read back.
const maxReferrersIndex = 256 << 10

// PushReferrer pushes a referrer manifest (one whose subject is subject)
// and its blobs to repo ("registry/repository"), and lists it in the
// referrers tag schema's index (tag sha256-<hex>, merged with the one
// there) for registries without the referrers API, as cosign and oras do.
func (g Registry) PushReferrer(ctx context.Context, repo string, subject digest.Digest, man Blob, blobs []Blob) error {
	named, err := reference.ParseNamed(repo)
	if err != nil {
		return fmt.Errorf("push referrer to %s: %w", repo, err)
	}
	byDigest, err := reference.WithDigest(reference.TrimNamed(named), man.Desc.Digest)
	if err != nil {
		return fmt.Errorf("push referrer to %s: %w", repo, err)
	}
	if _, err := g.PushArtifact(ctx, byDigest.String(), man, blobs); err != nil {
		return err
	}
	tag := named.Name() + ":" + strings.Replace(subject.String(), ":", "-", 1)
	idx, err := g.referrersIndex(ctx, tag)
	if err != nil {
		return err
	}
	idx.Manifests = slices.DeleteFunc(idx.Manifests, func(d ocispec.Descriptor) bool { return d.Digest == man.Desc.Digest })
	idx.Manifests = append(idx.Manifests, man.Desc)
	raw, err := json.Marshal(idx)
	if err != nil {
		return err
	}
	_, err = g.PushArtifact(ctx, tag, NewBlob(ocispec.MediaTypeImageIndex, raw), nil)
	return err
}

// referrersIndex reads the index tag holds, or an empty one.
func (g Registry) referrersIndex(ctx context.Context, tag string) (ocispec.Index, error) {
	idx := ocispec.Index{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageIndex}
	res := g.resolver(ctx)
	name, desc, err := res.Resolve(ctx, tag)
	if errdefs.IsNotFound(err) {
		return idx, nil
	}
	if err != nil {
		return idx, fmt.Errorf("referrers of %s: %w", tag, err)
	}
	if desc.MediaType != ocispec.MediaTypeImageIndex {
		return idx, fmt.Errorf("referrers of %s: the tag holds a %s, not an index", tag, desc.MediaType)
	}
	f, err := res.Fetcher(ctx, name)
	if err != nil {
		return idx, err
	}
	raw, err := readVerified(ctx, f.Fetch, desc, maxReferrersIndex, &budget{bytes: maxReferrersIndex})
	if err != nil {
		return idx, fmt.Errorf("referrers of %s: %w", tag, err)
	}
	var old ocispec.Index
	if err := json.Unmarshal(raw, &old); err != nil {
		return idx, fmt.Errorf("referrers of %s: %w", tag, err)
	}
	idx.Manifests = old.Manifests
	return idx, nil
}
