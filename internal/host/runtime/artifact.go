package runtime

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/containerd/containerd/v2/core/remotes"
	"github.com/distribution/reference"
	digest "github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/podhost/podhost/internal/model/runtimeapi"
)

// Bounds on an artifact (FetchArtifact): a registry may serve anything.
const (
	maxArtifactManifest = 64 << 10 // a manifest of a few layers is under 2 KiB
	maxArtifactBlobs    = 16       // config and layers
)

// ResolveArtifact returns the digest of the manifest ref (a tag or a
// digest reference, with its registry) names now, asking the registry
// through the hosts dir (mirrors) with the auth files' credentials, as a
// pull does (Registry.ResolveArtifact with the Runtime's settings).
func (r *Runtime) ResolveArtifact(ctx context.Context, ref string) (string, error) {
	return r.Registry().ResolveArtifact(ctx, ref)
}

// FetchArtifact is Registry.FetchArtifact with the Runtime's settings.
func (r *Runtime) FetchArtifact(ctx context.Context, ref, dgst string, maxBytes int64) (runtimeapi.Artifact, error) {
	return r.Registry().FetchArtifact(ctx, ref, dgst, maxBytes)
}

// ResolveArtifact returns the digest of the manifest ref names now.
func (g Registry) ResolveArtifact(ctx context.Context, ref string) (string, error) {
	desc, _, err := g.resolveArtifact(ctx, ref)
	if err != nil {
		return "", err
	}
	return desc.Digest.String(), nil
}

func (g Registry) resolveArtifact(ctx context.Context, ref string) (ocispec.Descriptor, remotes.Fetcher, error) {
	named, err := reference.ParseNamed(ref)
	if err != nil {
		return ocispec.Descriptor{}, nil, fmt.Errorf("artifact %s: %w", ref, err)
	}
	res := g.resolver(ctx)
	name, desc, err := res.Resolve(ctx, named.String())
	if err != nil {
		return ocispec.Descriptor{}, nil, fmt.Errorf("artifact %s: resolve: %w", ref, err)
	}
	if desc.MediaType != ocispec.MediaTypeImageManifest {
		return ocispec.Descriptor{}, nil, fmt.Errorf("artifact %s: media type %q: want an OCI image manifest (%s)", ref, desc.MediaType, ocispec.MediaTypeImageManifest)
	}
	if err := desc.Digest.Validate(); err != nil {
		return ocispec.Descriptor{}, nil, fmt.Errorf("artifact %s: digest: %w", ref, err)
	}
	f, err := res.Fetcher(ctx, name)
	if err != nil {
		return ocispec.Descriptor{}, nil, fmt.Errorf("artifact %s: %w", ref, err)
	}
	return desc, f, nil
}

// FetchArtifact reads the artifact manifest dgst of ref's repository, its
// config and its layers into memory: at most maxBytes for the blobs
// together, each checked against its descriptor (size and digest), the
// manifest at most 64 KiB, at most 16 blobs. Nothing is written to the
// content store.
func (g Registry) FetchArtifact(ctx context.Context, ref, dgst string, maxBytes int64) (runtimeapi.Artifact, error) {
	named, err := reference.ParseNamed(ref)
	if err != nil {
		return runtimeapi.Artifact{}, fmt.Errorf("artifact %s: %w", ref, err)
	}
	d, err := digest.Parse(dgst)
	if err != nil {
		return runtimeapi.Artifact{}, fmt.Errorf("artifact %s: digest %q: %w", ref, dgst, err)
	}
	byDigest, err := reference.WithDigest(reference.TrimNamed(named), d)
	if err != nil {
		return runtimeapi.Artifact{}, fmt.Errorf("artifact %s: %w", ref, err)
	}
	desc, f, err := g.resolveArtifact(ctx, byDigest.String())
	if err != nil {
		return runtimeapi.Artifact{}, err
	}
	if desc.Digest != d {
		return runtimeapi.Artifact{}, fmt.Errorf("artifact %s: the registry answered %s for %s", ref, desc.Digest, d)
	}
	raw, err := readVerified(ctx, f.Fetch, desc, maxArtifactManifest, &budget{bytes: maxArtifactManifest})
	if err != nil {
		return runtimeapi.Artifact{}, fmt.Errorf("artifact %s: manifest %s: %w", ref, d, err)
	}
	a := runtimeapi.Artifact{Digest: d.String()}
	if err := json.Unmarshal(raw, &a.Manifest); err != nil {
		return runtimeapi.Artifact{}, fmt.Errorf("artifact %s: manifest %s: %w", ref, d, err)
	}
	if a.Manifest.MediaType != "" && a.Manifest.MediaType != ocispec.MediaTypeImageManifest {
		return runtimeapi.Artifact{}, fmt.Errorf("artifact %s: manifest %s: media type %q", ref, d, a.Manifest.MediaType)
	}
	if n := 1 + len(a.Manifest.Layers); n > maxArtifactBlobs {
		return runtimeapi.Artifact{}, fmt.Errorf("artifact %s: %d blobs, at most %d allowed", ref, n, maxArtifactBlobs)
	}
	bud := &budget{bytes: maxBytes}
	if a.Config, err = readArtifactBlob(ctx, f, a.Manifest.Config, maxBytes, bud); err != nil {
		return runtimeapi.Artifact{}, fmt.Errorf("artifact %s: config: %w", ref, err)
	}
	for i, l := range a.Manifest.Layers {
		data, err := readArtifactBlob(ctx, f, l, maxBytes, bud)
		if err != nil {
			return runtimeapi.Artifact{}, fmt.Errorf("artifact %s: layer %d: %w", ref, i, err)
		}
		a.Layers = append(a.Layers, data)
	}
	return a, nil
}

func readArtifactBlob(ctx context.Context, f remotes.Fetcher, d ocispec.Descriptor, limit int64, bud *budget) ([]byte, error) {
	if d.Size > bud.bytes {
		return nil, fmt.Errorf("blob %s: %d bytes, beyond the %d bytes an artifact may hold", d.Digest, d.Size, limit)
	}
	return readVerified(ctx, f.Fetch, d, limit, bud)
}
