package cosign

import (
	"context"
	"crypto/elliptic"
	"os"
	"path/filepath"
	"strings"
	"testing"

	digest "github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/sigstore/sigstore/pkg/cryptoutils"

	"github.com/podhost/podhost/internal/host/imagesig"
	"github.com/podhost/podhost/internal/model/runtimeapi"
)

type bundles []runtimeapi.SignatureBundle

func (b bundles) SignatureBundles(context.Context, string, digest.Digest, bool) ([]runtimeapi.SignatureBundle, error) {
	return b, nil
}

// A key in cosign's encrypted format (what cosign generate-key-pair
// writes, made with sigstore's own function) signs a digest as cosign does:
// the image policy verifies it with the public key; a wrong password is
// refused.
func TestSignDigestWithACosignKey(t *testing.T) {
	pass := []byte("s3cret")
	privPEM, pubPEM, err := cryptoutils.GeneratePEMEncodedECDSAKeyPair(elliptic.P256(), cryptoutils.StaticPasswordFunc(pass))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(privPEM), "ENCRYPTED SIGSTORE PRIVATE KEY") {
		t.Fatalf("not cosign's key format:\n%s", privPEM)
	}
	if _, err := LoadKey(privPEM, []byte("wrong")); err == nil {
		t.Fatal("a wrong password loaded the key")
	}
	kp, err := LoadKey(privPEM, pass)
	if err != nil {
		t.Fatal(err)
	}
	dgst := digest.FromString("the artifact")
	b, err := SignDigest(kp, dgst, SignPredicate)
	if err != nil {
		t.Fatal(err)
	}
	pub := filepath.Join(t.TempDir(), "cosign.pub")
	if err := os.WriteFile(pub, pubPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	v, err := imagesig.New(imagesig.Policy{RequireSignatures: true, Keys: []string{pub}, AllowInsecure: true},
		bundles{{Source: "test", Data: b}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := v.VerifyArtifact(context.Background(), "registry.example/fleet/pods:1", dgst.String()); err != nil {
		t.Fatalf("the policy refuses the signature: %v", err)
	}
	if err := v.VerifyArtifact(context.Background(), "registry.example/fleet/pods:1", digest.FromString("another").String()); err == nil {
		t.Fatal("the signature verified for another digest")
	}
	man, blobs, err := Referrer(imagesigRefSubject(dgst), b)
	if err != nil || len(blobs) != 2 || man.Desc.ArtifactType != BundleMediaType {
		t.Fatalf("referrer: %v, %d blobs, %+v", err, len(blobs), man.Desc)
	}
}

func imagesigRefSubject(d digest.Digest) ocispec.Descriptor {
	return ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: d, Size: 100}
}
