package manifestcmd

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/distribution/reference"
	digest "github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/sigstore/sigstore-go/pkg/sign"

	"github.com/podhost/podhost/internal/clients/cmdutil"
	"github.com/podhost/podhost/internal/desired/source"
	"github.com/podhost/podhost/internal/host/imagesig/cosign"
	"github.com/podhost/podhost/internal/host/runtime"
)

// Annotations `flux push artifact` sets (OCI image-spec annotations).
const (
	annotationCreated  = "org.opencontainers.image.created"
	annotationSource   = "org.opencontainers.image.source"
	annotationRevision = "org.opencontainers.image.revision"
)

// PushOptions configure Push.
type PushOptions struct {
	Dir string // the manifest files (every file but dotfiles, as a manifest dir)
	Ref string // oci://REGISTRY/REPOSITORY:TAG
	// Source and Revision are recorded as the artifact's annotations (flux
	// push artifact's --source, --revision).
	Source, Revision string
	// Key, when set, is a private key file (cosign generate-key-pair's,
	// decrypted with Password, or a plain PEM key): the pushed artifact's
	// digest is signed with it as cosign sign does, and the signature pushed
	// as a referrer.
	Key      string
	Password []byte
	// Registry: the config's registryHostsDir and authFiles.
	Registry runtime.Registry
	Now      func() time.Time // the created annotation; default time.Now
}

// Push publishes Dir as a manifest artifact in Flux's format (what
// `flux push artifact` makes) to Ref, after checking it as a box's
// oci:// source will: any file it would refuse, or an artifact beyond
// its bounds, is the error and nothing is pushed. It prints the digest
// and, with Key, signs it (else: cosign sign --key … REPO@DIGEST).
func Push(ctx context.Context, o PushOptions, s cmdutil.IOStreams) error {
	ref, err := source.ParseOCIRef(o.Ref)
	if err != nil {
		return err
	}
	if st, err := os.Stat(o.Dir); err != nil {
		return err
	} else if !st.IsDir() {
		return fmt.Errorf("%s: not a directory", o.Dir)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	var kp sign.Keypair
	if o.Key != "" {
		pem, err := os.ReadFile(o.Key)
		if err != nil {
			return err
		}
		if kp, err = cosign.LoadKey(pem, o.Password); err != nil {
			return fmt.Errorf("%s: %w", o.Key, err)
		}
	}
	ann := map[string]string{annotationCreated: o.Now().UTC().Format(time.RFC3339)}
	if o.Source != "" {
		ann[annotationSource] = o.Source
	}
	if o.Revision != "" {
		ann[annotationRevision] = o.Revision
	}
	man, config, layer, err := source.PackFlux(os.DirFS(o.Dir), ann)
	if err != nil {
		return fmt.Errorf("%s: %w", o.Dir, err)
	}
	if n := len(config) + len(layer); n > source.MaxArtifactBytes {
		return fmt.Errorf("%s: the artifact is %d bytes compressed, more than the %d a podhost reads", o.Dir, n, source.MaxArtifactBytes)
	}
	objs, err := source.DecodeFluxLayer(o.Ref, layer)
	if err != nil {
		return fmt.Errorf("%s: nothing pushed: %w", o.Dir, err)
	}
	for _, sec := range objs.Secrets {
		fmt.Fprintf(s.ErrOut, "Warning: Secret %s/%s: anyone who can pull %s can read it\n", sec.Namespace, sec.Name, ref)
	}
	dgst, err := o.Registry.PushArtifact(ctx, ref, runtime.NewBlob(ocispec.MediaTypeImageManifest, man),
		[]runtime.Blob{runtime.NewBlob(source.FluxConfigMediaType, config), runtime.NewBlob(source.FluxContentMediaType, layer)})
	if err != nil {
		return err
	}
	fmt.Fprintf(s.Out, "pushed %s%s (%d pods, %d configmaps, %d secrets)\ndigest: %s\n", source.OCIScheme, ref,
		len(objs.Pods), len(objs.ConfigMaps), len(objs.Secrets), dgst)
	if kp == nil {
		return nil
	}
	subject := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.Digest(dgst), Size: int64(len(man))}
	sig, err := pushSignature(ctx, o.Registry, ref, subject, kp)
	if err != nil {
		return fmt.Errorf("pushed %s, but not its signature: %w", dgst, err)
	}
	fmt.Fprintf(s.Out, "signed with %s: referrer %s\n", o.Key, sig)
	return nil
}

// pushSignature signs subject as cosign sign does and pushes the bundle
// as its referrer in ref's repository; it returns the referrer's digest.
func pushSignature(ctx context.Context, reg runtime.Registry, ref string, subject ocispec.Descriptor, kp sign.Keypair) (string, error) {
	bundle, err := cosign.SignDigest(kp, subject.Digest, cosign.SignPredicate)
	if err != nil {
		return "", err
	}
	man, blobs, err := cosign.Referrer(subject, bundle)
	if err != nil {
		return "", err
	}
	var rblobs []runtime.Blob
	for _, b := range blobs {
		rblobs = append(rblobs, runtime.Blob(b))
	}
	named, err := reference.ParseNamed(ref)
	if err != nil {
		return "", err
	}
	if err := reg.PushReferrer(ctx, named.Name(), subject.Digest, runtime.Blob(man), rblobs); err != nil {
		return "", err
	}
	return man.Desc.Digest.String(), nil
}
