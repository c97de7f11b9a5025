package source

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/distribution/reference"

	"github.com/podhost/podhost/internal/desired/manifest"
	"github.com/podhost/podhost/internal/model/runtimeapi"
)

// OCIScheme prefixes a manifest artifact's reference (Flux's
// OCIRepository URLs): oci://REGISTRY/REPO:TAG.
const OCIScheme = "oci://"

// DefaultOCITimeout bounds one poll of a manifest artifact (resolve,
// signature, fetch).
const DefaultOCITimeout = time.Minute

// Registry reads artifacts from registries (*runtime.Runtime: containerd's
// resolver with podhost's hosts dir and auth files).
type Registry interface {
	// ResolveArtifact returns the digest of the manifest ref names now.
	ResolveArtifact(ctx context.Context, ref string) (string, error)
	// FetchArtifact reads the manifest dgst and its blobs, at most
	// maxBytes of blobs, each checked against its descriptor.
	FetchArtifact(ctx context.Context, ref, dgst string, maxBytes int64) (runtimeapi.Artifact, error)
}

// ArtifactVerifier checks an artifact's signature before its content is
// read (the image policy's: imagesig). nil error: verified, or not covered.
type ArtifactVerifier interface {
	VerifyArtifact(ctx context.Context, ref, dgst string) error
}

// OCIConfig configures an OCISource.
type OCIConfig struct {
	Ref      string // oci://REGISTRY/REPO:TAG (or @sha256:…)
	Registry Registry
	// Verifier, when set, must accept an artifact's digest before its
	// content is fetched; nil: no signature is required.
	Verifier ArtifactVerifier
	Period   time.Duration // poll period; default DefaultURLPeriod
	Timeout  time.Duration // per poll; default DefaultOCITimeout
	LastGood LastGood      // the last good layer, stored under Ref
	Logger   *slog.Logger
}

// OCISource polls a manifest artifact in Flux's format (a config of type
// FluxConfigMediaType and one layer of type FluxContentMediaType: a
// tar+gzip of YAML/JSON manifest files) at a tag. The tag is resolved at
// each poll; only a new digest is verified (Verifier), fetched (bounded:
// MaxArtifactBytes, MaxArtifactContent) and decoded. Exactly as the URL
// source, the last good content stays in effect while the registry fails,
// the signature does not verify, or the content is invalid; a FileError
// names the reference and lists the pods kept.
type OCISource struct {
	polled
	cfg    OCIConfig
	ref    string // without the scheme
	digest string // of the good content; "" until one was fetched
}

// NewOCI returns an OCISource; it fails on a reference it refuses.
func NewOCI(cfg OCIConfig) (*OCISource, error) {
	if cfg.Period <= 0 {
		cfg.Period = DefaultURLPeriod
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultOCITimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	ref, err := ParseOCIRef(cfg.Ref)
	if err != nil {
		return nil, err
	}
	if cfg.Registry == nil {
		return nil, errors.New("manifest artifact: no registry client")
	}
	display := OCIScheme + ref
	o := &OCISource{cfg: cfg, ref: ref, polled: polled{display: display, what: "manifest artifact", store: cfg.LastGood,
		log: cfg.Logger.With("component", "source", "artifact", display)}}
	o.decode = func(data []byte) (manifest.Objects, error) { return DecodeFluxLayer(display, data) }
	return o, nil
}

// ParseOCIRef checks an oci:// reference and returns it without the
// scheme: a registry host, a repository and a tag or a digest.
func ParseOCIRef(raw string) (string, error) {
	rest, ok := strings.CutPrefix(raw, OCIScheme)
	if !ok {
		return "", fmt.Errorf("%q: want oci://REGISTRY/REPOSITORY:TAG", raw)
	}
	named, err := reference.ParseNamed(rest)
	if err != nil {
		return "", fmt.Errorf("%q: %w (want oci://REGISTRY/REPOSITORY:TAG)", raw, err)
	}
	_, tagged := named.(reference.Tagged)
	_, digested := named.(reference.Digested)
	if !tagged && !digested {
		return "", fmt.Errorf("%q: no tag or digest (want oci://REGISTRY/REPOSITORY:TAG)", raw)
	}
	return named.String(), nil
}

// Run polls until ctx is done (see URLSource.Run).
func (o *OCISource) Run(ctx context.Context, out chan<- Snapshot) error {
	return o.run(ctx, out, o.cfg.Period, o.poll)
}

// poll resolves the reference once and, for a new digest, verifies,
// fetches and decodes it; it updates the good set or lastErr.
func (o *OCISource) poll(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, o.cfg.Timeout)
	defer cancel()
	dgst, err := o.cfg.Registry.ResolveArtifact(ctx, o.ref)
	if err != nil {
		o.lastErr = fmt.Errorf("%s: %w", o.display, err)
		return
	}
	if dgst == o.digest {
		o.lastErr = nil
		return
	}
	layer, objs, err := o.fetch(ctx, dgst)
	if err != nil {
		o.lastErr = fmt.Errorf("%s: %w", o.display, err)
		return
	}
	o.digest = dgst
	o.log.Info("manifest artifact fetched", "digest", dgst)
	o.setGood(layer, objs)
}

// fetch verifies the artifact dgst (before reading any of its content),
// reads it and decodes its layer.
func (o *OCISource) fetch(ctx context.Context, dgst string) ([]byte, manifest.Objects, error) {
	if o.cfg.Verifier != nil {
		if err := o.cfg.Verifier.VerifyArtifact(ctx, o.ref, dgst); err != nil {
			return nil, manifest.Objects{}, err
		}
	}
	a, err := o.cfg.Registry.FetchArtifact(ctx, o.ref, dgst, MaxArtifactBytes)
	if err != nil {
		return nil, manifest.Objects{}, err
	}
	layer, err := fluxLayer(a)
	if err != nil {
		return nil, manifest.Objects{}, fmt.Errorf("artifact %s: %w", dgst, err)
	}
	objs, err := DecodeFluxLayer(o.display, layer)
	if err != nil {
		return nil, manifest.Objects{}, fmt.Errorf("artifact %s: %w", dgst, err)
	}
	return layer, objs, nil
}
