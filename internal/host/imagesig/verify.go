package imagesig

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	digest "github.com/opencontainers/go-digest"
	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/verify"
	"k8s.io/utils/lru"

	"github.com/podhost/podhost/internal/model/runtimeapi"
)

// CosignSignPredicateType is the in-toto predicate of the statement
// `cosign sign --new-bundle-format` signs (a DSSE envelope whose subject is
// the image digest). Other predicates are attestations (cosign attest):
// they are no signature of the image and do not satisfy the policy.
const CosignSignPredicateType = "https://sigstore.dev/cosign/sign/v1"

// cacheSize bounds the verdicts kept (one per image digest and policy).
const cacheSize = 1024

// BundleSource finds the bundles attached to an image digest
// (*runtime.Runtime); remote: the registry may be asked too.
type BundleSource interface {
	SignatureBundles(ctx context.Context, ref string, dgst digest.Digest, remote bool) ([]runtimeapi.SignatureBundle, error)
}

// Verifier checks images against a Policy. Safe for concurrent use.
type Verifier struct {
	policy Policy
	src    BundleSource
	log    *slog.Logger
	ok     *lru.Cache // fingerprint|digest → key path that verified it
}

// New checks the policy's keys (one error naming the file) and returns
// its Verifier.
func New(p Policy, src BundleSource, log *slog.Logger) (*Verifier, error) {
	if log == nil {
		log = slog.Default()
	}
	if p.RequireSignatures && len(p.Keys) == 0 {
		return nil, errors.New("imagePolicy.keys: requireSignatures needs at least one public key")
	}
	if _, _, err := loadKeys(p); err != nil {
		return nil, err
	}
	return &Verifier{policy: p, src: src, log: log, ok: lru.New(cacheSize)}, nil
}

// Verify returns nil if the policy does not cover ref or if a bundle
// attached to dgst verifies with one of its keys, else an error wrapping
// runtimeapi.ErrImageSignature that names the image, the keys and what
// failed. remote: the registry may be asked (false for pull policy Never).
// The key files are read again for every image not yet verified, so a
// replaced key applies at once; verdicts are cached per digest and policy,
// failures are not (the pull back-off paces the retries).
func (v *Verifier) Verify(ctx context.Context, ref, dgst string, remote bool) error {
	return v.verify(ctx, "image", ref, dgst, remote)
}

// VerifyArtifact is Verify for a manifest artifact (the oci:// manifest
// source: source.ArtifactVerifier): the policy covers it as it would an
// image of its repository, and the registry is asked for its signatures.
func (v *Verifier) VerifyArtifact(ctx context.Context, ref, dgst string) error {
	return v.verify(ctx, "artifact", ref, dgst, true)
}

func (v *Verifier) verify(ctx context.Context, what, ref, dgst string, remote bool) error {
	if !v.policy.Covers(ref) {
		return nil
	}
	keys, fp, err := loadKeys(v.policy)
	if err != nil {
		return fmt.Errorf("%w: %s %s: %w", runtimeapi.ErrImageSignature, what, ref, err)
	}
	cacheKey := fp + "|" + dgst
	if _, ok := v.ok.Get(cacheKey); ok {
		return nil
	}
	d, err := digest.Parse(dgst)
	if err != nil {
		return fmt.Errorf("%w: %s %s: digest %q: %w", runtimeapi.ErrImageSignature, what, ref, dgst, err)
	}
	bundles, err := v.src.SignatureBundles(ctx, ref, d, remote)
	if err != nil {
		return fmt.Errorf("%w: %s %s@%s: finding signatures: %w", runtimeapi.ErrImageSignature, what, ref, dgst, err)
	}
	by, err := check(bundles, keys, d)
	if err != nil {
		return fmt.Errorf("%w: %s %s@%s: %w", runtimeapi.ErrImageSignature, what, ref, dgst, err)
	}
	v.ok.Add(cacheKey, by)
	v.log.Info(what+" signature verified", what, ref, "digest", dgst, "key", by)
	return nil
}

// check is the policy's decision: the path of the first key that
// verifies one of bundles as a signature of dgst, else an error saying, per
// bundle, why none did.
func check(bundles []runtimeapi.SignatureBundle, keys []key, dgst digest.Digest) (string, error) {
	paths := make([]string, len(keys))
	for i, k := range keys {
		paths[i] = k.path
	}
	names := strings.Join(paths, ", ")
	if len(bundles) == 0 {
		return "", fmt.Errorf("no signature (no Sigstore bundle referrer) found; required: a signature by %s", names)
	}
	raw, err := hex.DecodeString(dgst.Encoded())
	if err != nil {
		return "", fmt.Errorf("digest %s: %w", dgst, err)
	}
	artifact := verify.WithArtifactDigest(dgst.Algorithm().String(), raw)
	var why []string
	for _, b := range bundles {
		by, err := checkBundle(b.Data, keys, artifact)
		if err == nil {
			return by, nil
		}
		why = append(why, fmt.Sprintf("%s: %v", b.Source, err))
	}
	return "", fmt.Errorf("no valid signature by %s among %d bundle(s): %s", names, len(bundles), strings.Join(why, "; "))
}

func checkBundle(data []byte, keys []key, artifact verify.ArtifactPolicyOption) (string, error) {
	var b bundle.Bundle
	if err := b.UnmarshalJSON(data); err != nil {
		return "", fmt.Errorf("not a Sigstore bundle: %w", err)
	}
	var last error
	for _, k := range keys {
		res, err := k.v.Verify(&b, verify.NewPolicy(artifact, verify.WithKey()))
		if err != nil {
			last = err
			continue
		}
		if res.Statement != nil && res.Statement.GetPredicateType() != CosignSignPredicateType {
			return "", fmt.Errorf("signed by %s, but an attestation (predicate %s), not a signature", k.path, res.Statement.GetPredicateType())
		}
		return k.path, nil
	}
	return "", last
}
