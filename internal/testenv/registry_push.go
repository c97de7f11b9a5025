//go:build integration

package testenv

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/content"
	"github.com/containerd/errdefs"
	digest "github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/podhost/podhost/internal/host/imagesig/imagesigtest"
)

// PushedRegistry starts a registry for tb (stopped when tb ends, its log
// shown if tb failed) and pushes the test image (already imported into the
// Env's namespace) to it as repo ("podhost/busybox:1"). The pushed image is
// removed from the Env's containerd at the end. It returns the registry
// and the image's remote ref.
func (e *Env) PushedRegistry(tb testing.TB, ctx context.Context, opts RegistryOptions, repo string) (*Registry, string) {
	tb.Helper()
	reg := TestRegistry(tb, ctx, opts)
	ref := reg.Ref(repo)
	tb.Cleanup(func() {
		err := e.Client().ImageService().Delete(e.Context(context.Background()), ref)
		if err != nil && !errors.Is(err, errdefs.ErrNotFound) {
			tb.Errorf("delete image %s: %v", ref, err)
		}
	})
	if err := PushImage(e.Context(ctx), e.Client(), e.ImageRef, ref, reg.Creds); err != nil {
		tb.Fatal(err)
	}
	return reg, ref
}

// TestRegistry starts a registry for tb, stopped when tb ends (its log
// shown if tb failed).
func TestRegistry(tb testing.TB, ctx context.Context, opts RegistryOptions) *Registry {
	tb.Helper()
	reg, err := StartRegistry(ctx, tb.TempDir(), opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if tb.Failed() {
			tb.Logf("registry log %s:\n%s", reg.Log, reg.LogTail(30))
		}
		if err := reg.Close(); err != nil {
			tb.Error(err)
		}
	})
	return reg
}

// PushSignature signs subject (an image's manifest or index, by digest)
// with signer as `cosign sign --new-bundle-format` does and pushes the
// bundle to repo ("podhost/busybox") as an OCI 1.1 referrer: the referrer
// manifest, and the referrers tag-schema fallback (an index tagged
// sha256-<hex>) for registries without the referrers API. The blobs go
// through c's content store under a lease that ends with the push.
func PushSignature(ctx context.Context, c *client.Client, reg *Registry, repo string, subject ocispec.Descriptor, signer *imagesigtest.Signer) error {
	ctx, done, err := c.WithLease(ctx)
	if err != nil {
		return err
	}
	defer done(context.WithoutCancel(ctx))
	bundle, err := signer.SignDigest(subject.Digest, imagesigtest.CosignSignPredicate)
	if err != nil {
		return err
	}
	man, blobs, err := imagesigtest.Referrer(subject, bundle)
	if err != nil {
		return err
	}
	idx, err := json.Marshal(ocispec.Index{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageIndex,
		Manifests: []ocispec.Descriptor{man.Desc}})
	if err != nil {
		return err
	}
	idxDesc := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageIndex, Digest: digest.FromBytes(idx), Size: int64(len(idx))}
	for _, b := range append(blobs, man, imagesigtest.Blob{Desc: idxDesc, Data: idx}) {
		if err := content.WriteBlob(ctx, c.ContentStore(), b.Desc.Digest.String(), bytes.NewReader(b.Data), b.Desc); err != nil {
			return fmt.Errorf("testenv: signature of %s: %w", subject.Digest, err)
		}
	}
	fallback := reg.Ref(repo) + ":" + strings.Replace(subject.Digest.String(), ":", "-", 1)
	if err := c.Push(ctx, fallback, idxDesc, client.WithResolver(pushResolver(ctx, reg.Creds))); err != nil {
		return fmt.Errorf("testenv: push signature of %s as %s: %w", subject.Digest, fallback, err)
	}
	return nil
}
