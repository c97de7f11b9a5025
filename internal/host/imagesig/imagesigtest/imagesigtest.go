// Package imagesigtest signs image digests as cosign does, with
// sigstore-go's sign package, for tests of the image policy (unit and
// integration): a key pair, Sigstore bundles, and the OCI referrer
// manifest that attaches a bundle to an image.
package imagesigtest

import (
	"encoding/json"
	"fmt"
	"os"

	digest "github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/sigstore/sigstore-go/pkg/sign"
	"google.golang.org/protobuf/encoding/protojson"
)

// BundleMediaType is the Sigstore bundle v0.3 media type.
const BundleMediaType = "application/vnd.dev.sigstore.bundle.v0.3+json"

// CosignSignPredicate is the predicate type of `cosign sign --new-bundle-format`.
const CosignSignPredicate = "https://sigstore.dev/cosign/sign/v1"

// Signer holds a fresh ECDSA P-256 key pair (cosign's default).
type Signer struct{ kp *sign.EphemeralKeypair }

// NewSigner generates a key pair.
func NewSigner() (*Signer, error) {
	kp, err := sign.NewEphemeralKeypair(nil)
	if err != nil {
		return nil, err
	}
	return &Signer{kp: kp}, nil
}

// WritePublicKey writes the public key as PEM (cosign.pub's form).
func (s *Signer) WritePublicKey(path string) error {
	pem, err := s.kp.GetPublicKeyPem()
	if err != nil {
		return err
	}
	return os.WriteFile(path, []byte(pem), 0o644)
}

// SignDigest returns the bundle `cosign sign --new-bundle-format --key`
// makes for an image: a DSSE envelope over an in-toto statement whose
// subject is dgst, with predicateType (CosignSignPredicate for a
// signature).
func (s *Signer) SignDigest(dgst digest.Digest, predicateType string) ([]byte, error) {
	stmt, err := json.Marshal(map[string]any{
		"_type":         "https://in-toto.io/Statement/v1",
		"subject":       []any{map[string]any{"digest": map[string]string{dgst.Algorithm().String(): dgst.Encoded()}}},
		"predicateType": predicateType,
		"predicate":     map[string]any{},
	})
	if err != nil {
		return nil, err
	}
	return s.bundle(&sign.DSSEData{Data: stmt, PayloadType: "application/vnd.in-toto+json"})
}

// SignManifest returns a bundle with a message signature over the image's
// manifest bytes (its digest is the image digest).
func (s *Signer) SignManifest(manifest []byte) ([]byte, error) {
	return s.bundle(&sign.PlainData{Data: manifest})
}

func (s *Signer) bundle(c sign.Content) ([]byte, error) {
	b, err := sign.Bundle(c, s.kp, sign.BundleOptions{})
	if err != nil {
		return nil, fmt.Errorf("imagesigtest: sign: %w", err)
	}
	return protojson.Marshal(b)
}

// Blob is content to push or write into an OCI layout.
type Blob struct {
	Desc ocispec.Descriptor
	Data []byte
}

// Referrer returns the referrer manifest attaching bundle to subject, as
// cosign writes it (artifactType and the one layer of the bundle type, the
// empty config), and its blobs (config, bundle) to push first.
func Referrer(subject ocispec.Descriptor, bundle []byte) (Blob, []Blob, error) {
	cfg := Blob{Desc: ocispec.DescriptorEmptyJSON, Data: ocispec.DescriptorEmptyJSON.Data}
	cfg.Desc.Data = nil
	layer := Blob{Data: bundle, Desc: ocispec.Descriptor{MediaType: BundleMediaType, Digest: digest.FromBytes(bundle), Size: int64(len(bundle))}}
	m := ocispec.Manifest{
		Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageManifest,
		ArtifactType: BundleMediaType, Config: cfg.Desc, Layers: []ocispec.Descriptor{layer.Desc},
		Subject:     &ocispec.Descriptor{MediaType: subject.MediaType, Digest: subject.Digest, Size: subject.Size},
		Annotations: map[string]string{"dev.sigstore.bundle.content": "dsse-envelope"},
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return Blob{}, nil, err
	}
	man := Blob{Data: raw, Desc: ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, ArtifactType: BundleMediaType,
		Digest: digest.FromBytes(raw), Size: int64(len(raw))}}
	return man, []Blob{cfg, layer}, nil
}
