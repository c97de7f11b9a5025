package source

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
	"unicode"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podhost/podhost/internal/desired/manifest"
	"github.com/podhost/podhost/internal/model/runtimeapi"
	"github.com/podhost/podhost/internal/model/wellknown"
)

// Flux's OCI artifact format for Kubernetes manifests (`flux push
// artifact`; fluxcd/pkg/oci): an OCI image manifest whose config has
// FluxConfigMediaType and whose one layer, FluxContentMediaType, is a
// tar+gzip of the manifest files.
const (
	FluxConfigMediaType  = "application/vnd.cncf.flux.config.v1+json"
	FluxContentMediaType = "application/vnd.cncf.flux.content.v1.tar+gzip"
)

// Bounds on a manifest artifact: a registry may serve anything.
const (
	MaxArtifactBytes   = 4 << 20 // config and layer as fetched (compressed)
	MaxArtifactContent = 8 << 20 // the layer's tar, uncompressed
	maxArtifactEntries = 1024    // tar entries (files, directories, links)
)

// fluxLayer returns the content layer of a Flux artifact, or why a is none.
func fluxLayer(a runtimeapi.Artifact) ([]byte, error) {
	m := a.Manifest
	if m.MediaType != "" && m.MediaType != ocispec.MediaTypeImageManifest {
		return nil, fmt.Errorf("manifest media type %q: want %s", m.MediaType, ocispec.MediaTypeImageManifest)
	}
	if m.Config.MediaType != FluxConfigMediaType {
		return nil, fmt.Errorf("config media type %q: not a Flux artifact (want %s; `podhost manifests push` or `flux push artifact` makes one)", m.Config.MediaType, FluxConfigMediaType)
	}
	if len(m.Layers) != 1 || len(a.Layers) != 1 {
		return nil, fmt.Errorf("%d layers: a Flux artifact has one (%s)", len(m.Layers), FluxContentMediaType)
	}
	if mt := m.Layers[0].MediaType; mt != FluxContentMediaType {
		return nil, fmt.Errorf("layer media type %q: want %s", mt, FluxContentMediaType)
	}
	return a.Layers[0], nil
}

// errNoManifestFile: an artifact of the wrong directory (a README, no
// manifest) is no request to remove every pod; a file with an empty List is.
var errNoManifestFile = errors.New("no manifest file (*.yaml, *.yml, *.json) in the artifact (one holding an empty v1 List removes every pod)")

// artifactFile is one manifest file of an artifact's layer.
type artifactFile struct {
	name string
	data []byte
}

// DecodeFluxLayer (the OCI source's and `manifests push`'s check) reads the manifest files (IsManifestName, not under
// a dot directory) of a Flux content layer, in name order, and decodes
// each as the URL source does a response (Pods, ConfigMaps, Secrets,
// Lists); every object's config-source is display. Any invalid file, an
// object two files declare, or no manifest file at all refuses the whole
// layer.
func DecodeFluxLayer(display string, layer []byte) (manifest.Objects, error) {
	files, err := readArtifactLayer(layer)
	if err != nil {
		return manifest.Objects{}, err
	}
	if len(files) == 0 {
		return manifest.Objects{}, errNoManifestFile
	}
	var all manifest.Objects
	var errs []error
	var expanded int64
	for _, f := range files {
		x, err := manifest.ExpandLists(f.name, f.data)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		objs, err := manifest.DecodeObjects(f.name, x.Data)
		if err != nil {
			errs = append(errs, x.Locate(err))
			continue
		}
		if expanded += objs.ExpandedBytes(); expanded > manifest.MaxExpandedBytes {
			return manifest.Objects{}, fmt.Errorf("the artifact's workloads expand into more than %d MiB of pods (each file may, the whole artifact may not)", manifest.MaxExpandedBytes>>20)
		}
		all.Pods = append(all.Pods, objs.Pods...)
		all.ConfigMaps = append(all.ConfigMaps, objs.ConfigMaps...)
		all.Secrets = append(all.Secrets, objs.Secrets...)
		all.Workloads = append(all.Workloads, objs.Workloads...)
		all.Services = append(all.Services, objs.Services...)
		all.ServiceAccounts = append(all.ServiceAccounts, objs.ServiceAccounts...)
		all.Ignored = append(all.Ignored, objs.Ignored...)
	}
	if len(errs) > 0 {
		return manifest.Objects{}, errors.Join(errs...)
	}
	if err := uniqueObjects(all); err != nil {
		return manifest.Objects{}, err
	}
	for _, p := range all.Pods {
		p.Annotations[wellknown.AnnotationConfigSource] = display
	}
	for _, c := range all.ConfigMaps {
		c.Annotations[wellknown.AnnotationConfigSource] = display
	}
	for _, s := range all.Secrets {
		s.Annotations[wellknown.AnnotationConfigSource] = display
	}
	for _, w := range all.Workloads {
		setSource(w.Meta(), display)
	}
	for _, s := range all.Services {
		setSource(&s.ObjectMeta, display)
	}
	for _, sa := range all.ServiceAccounts {
		setSource(&sa.ObjectMeta, display)
	}
	for _, ig := range all.Ignored {
		setSource(&ig.ObjectMeta, display)
	}
	return all, nil
}

// uniqueObjects refuses a pod (by name or UID), ConfigMap or Secret that
// two files of the artifact declare.
func uniqueObjects(o manifest.Objects) error {
	seen := map[string]string{}
	claim := func(key string, m metav1.ObjectMeta) error {
		file := m.Annotations[wellknown.AnnotationConfigSource]
		if first, dup := seen[key]; dup {
			return fmt.Errorf("%s: %s: also declared by %s", file, key, first)
		}
		seen[key] = file
		return nil
	}
	var errs []error
	for _, p := range o.Pods {
		errs = append(errs, claim("pod "+manifest.FullName(p), p.ObjectMeta), claim("pod uid "+string(p.UID), p.ObjectMeta))
	}
	for _, c := range o.ConfigMaps {
		errs = append(errs, claim("configmap "+c.Namespace+"/"+c.Name, c.ObjectMeta))
	}
	for _, s := range o.Secrets {
		errs = append(errs, claim("secret "+s.Namespace+"/"+s.Name, s.ObjectMeta))
	}
	for _, w := range o.Workloads {
		errs = append(errs, claim(strings.ToLower(w.Kind)+" "+w.Meta().Namespace+"/"+w.Meta().Name, *w.Meta()))
	}
	for _, s := range o.Services {
		errs = append(errs, claim("service "+s.Namespace+"/"+s.Name, s.ObjectMeta))
	}
	for _, sa := range o.ServiceAccounts {
		errs = append(errs, claim("serviceaccount "+sa.Namespace+"/"+sa.Name, sa.ObjectMeta))
	}
	for _, ig := range o.Ignored {
		errs = append(errs, claim(strings.ToLower(ig.Kind)+" "+ig.ObjectMeta.Namespace+"/"+ig.ObjectMeta.Name, ig.ObjectMeta))
	}
	return errors.Join(errs...)
}

// readArtifactLayer reads the manifest files of a tar+gzip layer, bounded:
// MaxArtifactContent bytes uncompressed, maxArtifactEntries entries,
// manifest.MaxFileSize a file. Entries that are no regular file, and names
// that are no manifest's, are skipped; a name with a control character or
// one seen twice is an error.
func readArtifactLayer(layer []byte) ([]artifactFile, error) {
	zr, err := gzip.NewReader(bytes.NewReader(layer))
	if err != nil {
		return nil, fmt.Errorf("layer: not gzip: %w", err)
	}
	lim := &io.LimitedReader{R: zr, N: MaxArtifactContent + 1}
	tr := tar.NewReader(lim)
	var files []artifactFile
	seen := map[string]bool{}
	for n := 0; ; n++ {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, layerErr(lim, err)
		}
		if n == maxArtifactEntries {
			return nil, fmt.Errorf("layer: more than %d entries", maxArtifactEntries)
		}
		name, ok, err := artifactName(h)
		if err != nil || !ok {
			if err != nil {
				return nil, err
			}
			continue
		}
		if seen[name] {
			return nil, fmt.Errorf("layer: %s: twice in the tar", name)
		}
		seen[name] = true
		data, err := manifest.ReadLimited(tr, name, h.Size)
		if err != nil {
			return nil, layerErr(lim, err)
		}
		files = append(files, artifactFile{name: name, data: data})
	}
	if _, err := io.Copy(io.Discard, tr); err != nil {
		return nil, layerErr(lim, err)
	}
	slices.SortFunc(files, func(a, b artifactFile) int { return strings.Compare(a.name, b.name) })
	return files, nil
}

// artifactName is the name a tar entry is shown and sorted by, and
// whether it is a manifest file to read.
func artifactName(h *tar.Header) (string, bool, error) {
	if strings.IndexFunc(h.Name, func(r rune) bool { return unicode.IsControl(r) || r == unicode.ReplacementChar }) >= 0 || len(h.Name) > 1024 {
		return "", false, fmt.Errorf("layer: entry %q: name refused", h.Name)
	}
	if h.Typeflag != tar.TypeReg {
		return "", false, nil
	}
	name := strings.TrimPrefix(path.Clean("/"+h.Name), "/")
	for _, elem := range strings.Split(path.Dir(name), "/") {
		if strings.HasPrefix(elem, ".") && elem != "." {
			return "", false, nil
		}
	}
	return name, IsManifestName(path.Base(name)), nil
}

// layerErr names the uncompressed bound when the read stopped there.
func layerErr(lim *io.LimitedReader, err error) error {
	if lim.N <= 0 {
		return fmt.Errorf("layer: more than %d bytes uncompressed", MaxArtifactContent)
	}
	return fmt.Errorf("layer: %w", err)
}

// setSource sets m's config-source annotation to display.
func setSource(m *metav1.ObjectMeta, display string) {
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	m.Annotations[wellknown.AnnotationConfigSource] = display
}
