package runtime

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/containerd/containerd/v2/core/content"
	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
	digest "github.com/opencontainers/go-digest"
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
