// Package imagesig enforces the image policy (config imagePolicy): an
// image the policy covers runs only if a Sigstore bundle attached to its
// digest (an OCI referrer, in its registry or imported with an archive)
// verifies with one of the policy's public keys. Bundles are verified by
// sigstore-go; this package decides which bundles count, and caches the
// verdicts per image digest. See docs/security.md "Signed images".
package imagesig

import (
	"crypto"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/distribution/reference"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/verify"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"

	"github.com/podhost/podhost/internal/desired/source"
)

// Policy is the config's imagePolicy.
type Policy struct {
	// RequireSignatures turns verification on; off, nothing is checked.
	RequireSignatures bool
	// Keys are PEM public key files (cosign.pub, `cosign generate-key-pair`'s
	// or any PKIX ECDSA, RSA or Ed25519 key): a signature from any one of
	// them is enough.
	Keys []string
	// Images are the repositories the policy covers, as
	// containers-policy.json scopes: "registry.example.com" (a host),
	// "registry.example.com/vendor" (a namespace) or a repository, each
	// matched at a path boundary against the normalized name
	// ("busybox" is docker.io/library/busybox). Empty: every image. The
	// config checks them (config.ImagePolicy).
	Images []string
	// AllowInsecure skips the key files' ownership and mode checks (each
	// key file and its directory must be owned by root and not group- or
	// world-writable: whoever can write a key decides what runs). The
	// config's allowInsecureManifests.
	AllowInsecure bool
}

// Covers reports whether the policy applies to ref (any image reference;
// a name that does not parse is covered).
func (p Policy) Covers(ref string) bool {
	if !p.RequireSignatures {
		return false
	}
	if len(p.Images) == 0 {
		return true
	}
	named, err := reference.ParseDockerRef(ref)
	if err != nil {
		return true
	}
	name := named.Name()
	for _, s := range p.Images {
		if name == s || strings.HasPrefix(name, s+"/") {
			return true
		}
	}
	return false
}

// key is one trusted public key and its sigstore-go verifier.
type key struct {
	path string
	v    *verify.Verifier
}

// loadKeys reads the key files and returns their verifiers and a
// fingerprint of the policy (keys' DER and scopes): verdicts cached under
// another fingerprint are not used.
func loadKeys(p Policy) ([]key, string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "%v|%q|", p.RequireSignatures, p.Images)
	keys := make([]key, 0, len(p.Keys))
	for _, path := range p.Keys {
		if !p.AllowInsecure {
			for _, f := range []string{filepath.Dir(path), path} {
				if err := source.CheckPerms(f); err != nil {
					return nil, "", fmt.Errorf("imagePolicy.keys: %w", err)
				}
			}
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, "", fmt.Errorf("imagePolicy.keys: %w", err)
		}
		pub, err := cryptoutils.UnmarshalPEMToPublicKey(data)
		if err != nil {
			return nil, "", fmt.Errorf("imagePolicy.keys: %s: no PEM public key: %w", path, err)
		}
		der, err := cryptoutils.MarshalPublicKeyToDER(pub)
		if err != nil {
			return nil, "", fmt.Errorf("imagePolicy.keys: %s: %w", path, err)
		}
		sv, err := signature.LoadVerifier(pub, crypto.SHA256)
		if err != nil {
			return nil, "", fmt.Errorf("imagePolicy.keys: %s: %w", path, err)
		}
		// A bare key has no validity period: it is trusted until removed
		// from the policy (cosign verify --key).
		tm := root.NewTrustedPublicKeyMaterial(func(string) (root.TimeConstrainedVerifier, error) {
			return root.NewExpiringKey(sv, time.Time{}, time.Time{}), nil
		})
		v, err := verify.NewVerifier(tm, verify.WithNoObserverTimestamps())
		if err != nil {
			return nil, "", fmt.Errorf("imagePolicy.keys: %s: %w", path, err)
		}
		keys = append(keys, key{path: path, v: v})
		h.Write(der)
	}
	return keys, hex.EncodeToString(h.Sum(nil)), nil
}
