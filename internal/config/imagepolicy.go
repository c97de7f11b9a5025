package config

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/distribution/reference"
)

// ImagePolicy is the signature policy images must meet to run
// (internal/host/imagesig; docs/security.md "Signed images"). Key
// imagePolicy; off by default.
type ImagePolicy struct {
	// RequireSignatures: an image the policy covers runs only with a valid
	// Sigstore signature by one of Keys.
	RequireSignatures bool
	// Keys are PEM public key files (absolute paths), as cosign verify --key.
	Keys []string
	// Images are the registries, namespaces or repositories covered
	// (containers-policy.json scopes, no tag); empty: every image.
	Images []string
}

type imagePolicyFile struct {
	RequireSignatures *bool    `json:"requireSignatures"`
	Keys              []string `json:"keys"`
	Images            []string `json:"images"`
}

func (f *imagePolicyFile) applyTo(p *ImagePolicy) {
	if f == nil {
		return
	}
	if f.RequireSignatures != nil {
		p.RequireSignatures = *f.RequireSignatures
	}
	if f.Keys != nil {
		p.Keys = f.Keys
	}
	if f.Images != nil {
		p.Images = f.Images
	}
}

func (p ImagePolicy) validate() error {
	var errs []error
	if p.RequireSignatures && len(p.Keys) == 0 {
		errs = append(errs, errors.New("imagePolicy.keys: requireSignatures needs at least one public key file"))
	}
	for i, k := range p.Keys {
		if !filepath.IsAbs(k) {
			errs = append(errs, fmt.Errorf("imagePolicy.keys[%d]: must be an absolute path, got %q", i, k))
		}
	}
	for i, s := range p.Images {
		if err := validateScope(s); err != nil {
			errs = append(errs, fmt.Errorf("imagePolicy.images[%d]: %w", i, err))
		}
	}
	return errors.Join(errs...)
}

// validateScope checks one images entry: a registry host, or a name
// without tag or digest.
func validateScope(s string) error {
	if s == "" || strings.ContainsAny(s, "@ ") || strings.HasSuffix(s, "/") {
		return fmt.Errorf("%q is no registry, namespace or repository", s)
	}
	host, rest, _ := strings.Cut(s, "/")
	if rest == "" {
		if strings.ContainsAny(host, ".:") || host == "localhost" {
			return nil
		}
		return fmt.Errorf("%q: a lone name must be a registry host (with a dot or a port); write docker.io/library/%s for a Docker Hub image", s, s)
	}
	named, err := reference.ParseNamed(s)
	if err != nil {
		return fmt.Errorf("%q: %w (write the full name, no tag)", s, err)
	}
	if _, tagged := named.(reference.Tagged); tagged {
		return fmt.Errorf("%q: a scope names no tag", s)
	}
	return nil
}
