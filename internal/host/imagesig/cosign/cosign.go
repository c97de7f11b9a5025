// Package cosign signs digests as `cosign sign --key … --new-bundle-format`
// does, with sigstore-go's sign package and sigstore's key loading (no
// crypto of its own): a cosign key file, the Sigstore bundle of an in-toto
// statement over the digest, and the OCI referrer manifest that attaches
// the bundle to its subject. `podhost manifests push --key` and the tests'
// signers use it; imagesig verifies what it makes.
package cosign

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"

	digest "github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	"github.com/sigstore/sigstore-go/pkg/sign"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
	"google.golang.org/protobuf/encoding/protojson"
)

// BundleMediaType is the Sigstore bundle v0.3 media type: the referrer's
// artifactType and its one layer's.
const BundleMediaType = "application/vnd.dev.sigstore.bundle.v0.3+json"

// SignPredicate is the predicate type of cosign's signature statement.
const SignPredicate = "https://sigstore.dev/cosign/sign/v1"

// LoadKey reads a private key file: cosign's (`cosign generate-key-pair`,
// encrypted with password) or a PEM PKCS#8, PKCS#1 or SEC 1 key.
func LoadKey(pemBytes, password []byte) (sign.Keypair, error) {
	priv, err := cryptoutils.UnmarshalPEMToPrivateKey(pemBytes, cryptoutils.StaticPasswordFunc(password))
	if err != nil {
		return nil, fmt.Errorf("signing key: %w", err)
	}
	return NewKeypair(priv)
}

// NewKeypair wraps a private key for sigstore-go's sign package, with the
// key's default algorithm (ECDSA P-256 with SHA-256 for cosign's keys).
func NewKeypair(priv crypto.PrivateKey) (sign.Keypair, error) {
	s, ok := priv.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("signing key: %T cannot sign", priv)
	}
	alg, err := signature.GetDefaultAlgorithmDetails(s.Public())
	if err != nil {
		return nil, fmt.Errorf("signing key: %w", err)
	}
	der, err := x509.MarshalPKIXPublicKey(s.Public())
	if err != nil {
		return nil, fmt.Errorf("signing key: %w", err)
	}
	sum := sha256.Sum256(der)
	return &keypair{priv: s, alg: alg, hint: []byte(base64.StdEncoding.EncodeToString(sum[:]))}, nil
}

// keypair is sign.Keypair over a key read from a file (sigstore-go has
// only ephemeral ones); it signs as sign.EphemeralKeypair does.
type keypair struct {
	priv crypto.Signer
	alg  signature.AlgorithmDetails
	hint []byte
}

func (k *keypair) GetHashAlgorithm() protocommon.HashAlgorithm { return k.alg.GetProtoHashType() }
func (k *keypair) GetSigningAlgorithm() protocommon.PublicKeyDetails {
	return k.alg.GetSignatureAlgorithm()
}
func (k *keypair) GetHint() []byte                { return k.hint }
func (k *keypair) GetPublicKey() crypto.PublicKey { return k.priv.Public() }

func (k *keypair) GetKeyAlgorithm() string {
	switch k.alg.GetKeyType() {
	case signature.ECDSA:
		return "ECDSA"
	case signature.RSA:
		return "RSA"
	case signature.ED25519:
		return "ED25519"
	}
	return ""
}

func (k *keypair) GetPublicKeyPem() (string, error) {
	pem, err := cryptoutils.MarshalPublicKeyToPEM(k.priv.Public())
	return string(pem), err
}

// SignData returns the signature and what was signed: the digest of data,
// or data itself for pure Ed25519.
func (k *keypair) SignData(_ context.Context, data []byte) ([]byte, []byte, error) {
	hf := k.alg.GetHashType()
	toSign := data
	if hf != crypto.Hash(0) {
		h := hf.New()
		h.Write(data)
		toSign = h.Sum(nil)
	}
	sig, err := k.priv.Sign(rand.Reader, toSign, hf)
	return sig, toSign, err
}

// SignDigest returns the bundle `cosign sign --new-bundle-format --key`
// makes for dgst: a DSSE envelope over an in-toto statement whose subject
// is dgst, with predicateType (SignPredicate for a signature).
func SignDigest(kp sign.Keypair, dgst digest.Digest, predicateType string) ([]byte, error) {
	if err := dgst.Validate(); err != nil {
		return nil, err
	}
	stmt, err := json.Marshal(map[string]any{
		"_type":         "https://in-toto.io/Statement/v1",
		"subject":       []any{map[string]any{"digest": map[string]string{dgst.Algorithm().String(): dgst.Encoded()}}},
		"predicateType": predicateType,
		"predicate":     map[string]any{},
	})
	if err != nil {
		return nil, err
	}
	return Bundle(kp, &sign.DSSEData{Data: stmt, PayloadType: "application/vnd.in-toto+json"})
}

// Bundle signs content with kp into a Sigstore bundle (JSON), with no
// certificate authority, transparency log or timestamp authority: a keyed
// signature an offline box verifies with the public key.
func Bundle(kp sign.Keypair, c sign.Content) ([]byte, error) {
	b, err := sign.Bundle(c, kp, sign.BundleOptions{})
	if err != nil {
		return nil, fmt.Errorf("sign: %w", err)
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
	if err := subject.Digest.Validate(); err != nil {
		return Blob{}, nil, fmt.Errorf("referrer: subject: %w", err)
	}
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
