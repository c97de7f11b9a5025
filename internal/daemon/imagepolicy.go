package daemon

import (
	"context"
	"log/slog"

	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/config"
	"github.com/podhost/podhost/internal/host/imagesig"
	"github.com/podhost/podhost/internal/host/runtime"
	"github.com/podhost/podhost/internal/kubelet/syncer"
	"github.com/podhost/podhost/internal/model/runtimeapi"
)

// imageVerifier is the image policy's verifier (config imagePolicy), nil
// when the policy is off; a key file that does not load is the error.
func imageVerifier(cfg *config.Config, rt *runtime.Runtime, log *slog.Logger) (*imagesig.Verifier, error) {
	p := cfg.ImagePolicy
	if !p.RequireSignatures {
		return nil, nil
	}
	v, err := imagesig.New(imagesig.Policy{RequireSignatures: true, Keys: p.Keys, Images: p.Images,
		AllowInsecure: cfg.AllowInsecureManifests}, rt, log)
	if err != nil {
		return nil, err
	}
	log.Info("image policy: signatures required", "keys", p.Keys, "images", p.Images)
	return v, nil
}

// verifiedImages is the syncer's runtime under the image policy: an image
// EnsureImage resolved is verified before any container is created from it.
type verifiedImages struct {
	syncer.Runtime
	v *imagesig.Verifier
}

func (r verifiedImages) EnsureImage(ctx context.Context, ref string, policy corev1.PullPolicy) (runtimeapi.Image, error) {
	img, err := r.Runtime.EnsureImage(ctx, ref, policy)
	if err != nil {
		return img, err
	}
	// Pull policy Never: the registry is not asked for signatures either.
	if err := r.v.Verify(ctx, img.Ref, img.Digest, policy != corev1.PullNever); err != nil {
		return runtimeapi.Image{}, err
	}
	return img, nil
}
