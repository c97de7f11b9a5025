// Package imagesigtest signs image digests as cosign does (package
// cosign, sigstore-go's sign package), for tests of the image policy (unit
// and integration): a fresh key pair, Sigstore bundles, and the OCI
// referrer manifest that attaches a bundle to an image.
package imagesigtest

import (
	"os"

	digest "github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/sigstore/sigstore-go/pkg/sign"

	"github.com/podhost/podhost/internal/host/imagesig/cosign"
)

// BundleMediaType is the Sigstore bundle v0.3 media type.
const BundleMediaType = cosign.BundleMediaType

// CosignSignPredicate is the predicate type of `cosign sign --new-bundle-format`.
const CosignSignPredicate = cosign.SignPredicate

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
// makes for an image (cosign.SignDigest).
func (s *Signer) SignDigest(dgst digest.Digest, predicateType string) ([]byte, error) {
	return cosign.SignDigest(s.kp, dgst, predicateType)
}

// SignManifest returns a bundle with a message signature over the image's
// manifest bytes (its digest is the image digest).
func (s *Signer) SignManifest(manifest []byte) ([]byte, error) {
	return cosign.Bundle(s.kp, &sign.PlainData{Data: manifest})
}

// Blob is content to push or write into an OCI layout.
type Blob = cosign.Blob

// Referrer is cosign.Referrer: the referrer manifest attaching bundle to
// subject, and its blobs (config, bundle) to push first.
func Referrer(subject ocispec.Descriptor, bundle []byte) (Blob, []Blob, error) {
	return cosign.Referrer(subject, bundle)
}
