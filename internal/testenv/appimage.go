//go:build integration

package testenv

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/klauspost/compress/zstd"
	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/podhost/podhost/internal/host/imagesig/imagesigtest"
)

// AppImage describes an image archive BuildAppImage writes: the test
// image's busybox layer and a layer of its own (/etc/app-id holding Ref,
// and Payload bytes of incompressible data in /payload).
type AppImage struct {
	Ref     string
	Payload int64
	Seed    uint64
	// Format: "oci" (default: an OCI image layout) or "docker" (`docker
	// save`'s manifest.json layout).
	Format string
	// Compression of the whole archive: "", "gzip" or "zstd".
	Compression string
	// SignedBy, if set (OCI format only), adds a Sigstore bundle signing
	// the image's manifest digest (as cosign sign --new-bundle-format) as
	// an OCI referrer, listed in index.json beside the image.
	SignedBy *imagesigtest.Signer
}

// BuildAppImage writes img's archive to path (through a temp file in its
// directory, renamed into place). Layers are spooled to temp files, so
// memory stays small whatever the payload.
func BuildAppImage(path string, img AppImage) error {
	dir := filepath.Dir(path)
	base, err := busyboxLayerFile(dir)
	if err != nil {
		return err
	}
	defer os.Remove(base.path)
	app, err := appLayerFile(dir, img)
	if err != nil {
		return err
	}
	defer os.Remove(app.path)
	tmp, err := os.CreateTemp(dir, ".app-*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := writeArchive(tmp, img, []blobFile{base, app}); err != nil {
		tmp.Close()
		return fmt.Errorf("app image %s: %w", img.Ref, err)
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// blobFile is a layer spooled to disk.
type blobFile struct {
	path   string
	digest digest.Digest
	size   int64
}

func spool(dir string, write func(io.Writer) error) (blobFile, error) {
	f, err := os.CreateTemp(dir, ".layer-*.tmp")
	if err != nil {
		return blobFile{}, err
	}
	defer f.Close()
	h := sha256.New()
	cw := &countWriter{w: io.MultiWriter(f, h)}
	if err := write(cw); err != nil {
		os.Remove(f.Name())
		return blobFile{}, err
	}
	return blobFile{path: f.Name(), digest: digest.NewDigest(digest.SHA256, h), size: cw.n}, nil
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

func busyboxLayerFile(dir string) (blobFile, error) {
	bb, err := os.ReadFile(BusyboxPath())
	if err != nil {
		return blobFile{}, err
	}
	out, err := exec.Command(BusyboxPath(), "--list-full").Output()
	if err != nil {
		return blobFile{}, err
	}
	layer, err := rootfsLayer(bb, strings.Fields(string(out)), "")
	if err != nil {
		return blobFile{}, err
	}
	return spool(dir, func(w io.Writer) error { _, err := w.Write(layer); return err })
}

func appLayerFile(dir string, img AppImage) (blobFile, error) {
	return spool(dir, func(w io.Writer) error {
		tw := tar.NewWriter(w)
		if err := tw.WriteHeader(dirHeader("etc/", 0o755)); err != nil {
			return err
		}
		if err := writeFile(tw, "etc/app-id", 0o644, []byte(img.Ref+"\n")); err != nil {
			return err
		}
		if img.Payload > 0 {
			h := &tar.Header{Name: "payload", Mode: 0o644, Size: img.Payload, ModTime: epoch, Typeflag: tar.TypeReg}
			if err := tw.WriteHeader(h); err != nil {
				return err
			}
			var seed [32]byte
			copy(seed[:], fmt.Sprintf("%d/%s", img.Seed, img.Ref))
			if _, err := io.CopyN(tw, rand.NewChaCha8(seed), img.Payload); err != nil {
				return err
			}
		}
		return tw.Close()
	})
}

// writeArchive writes the archive of img with layers to out.
func writeArchive(out io.Writer, img AppImage, layers []blobFile) error {
	var w io.Writer = out
	var closer io.Closer
	switch img.Compression {
	case "gzip":
		gz := gzip.NewWriter(out)
		w, closer = gz, gz
	case "zstd":
		zw, err := zstd.NewWriter(out)
		if err != nil {
			return err
		}
		w, closer = zw, zw
	case "":
	default:
		return fmt.Errorf("compression %q", img.Compression)
	}
	tw := tar.NewWriter(w)
	var err error
	if img.Format == "docker" {
		err = writeDockerLayout(tw, img, layers)
	} else {
		err = writeOCILayout(tw, img, layers)
	}
	if err == nil {
		err = tw.Close()
	}
	if err == nil && closer != nil {
		err = closer.Close()
	}
	return err
}

func imageConfig(img AppImage, layers []blobFile) ([]byte, error) {
	created := epoch
	var diffIDs []digest.Digest
	for _, l := range layers {
		diffIDs = append(diffIDs, l.digest)
	}
	return json.Marshal(ocispec.Image{
		Created:  &created,
		Platform: ocispec.Platform{OS: "linux", Architecture: runtime.GOARCH},
		Config: ocispec.ImageConfig{
			Env: []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
			Cmd: []string{"sh"}, WorkingDir: "/",
		},
		RootFS: ocispec.RootFS{Type: "layers", DiffIDs: diffIDs},
	})
}

func copyBlob(tw *tar.Writer, name string, l blobFile) error {
	f, err := os.Open(l.path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: l.size, ModTime: epoch, Typeflag: tar.TypeReg}); err != nil {
		return err
	}
	_, err = io.Copy(tw, f)
	return err
}

func writeOCILayout(tw *tar.Writer, img AppImage, layers []blobFile) error {
	config, err := imageConfig(img, layers)
	if err != nil {
		return err
	}
	m := ocispec.Manifest{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageManifest,
		Config: ocispec.Descriptor{MediaType: ocispec.MediaTypeImageConfig, Digest: digest.FromBytes(config), Size: int64(len(config))}}
	for _, l := range layers {
		m.Layers = append(m.Layers, ocispec.Descriptor{MediaType: ocispec.MediaTypeImageLayer, Digest: l.digest, Size: l.size})
	}
	manifest, err := json.Marshal(m)
	if err != nil {
		return err
	}
	platform := ocispec.Platform{OS: "linux", Architecture: runtime.GOARCH}
	index, err := json.Marshal(ocispec.Index{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageIndex,
		Manifests: []ocispec.Descriptor{{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.FromBytes(manifest),
			Size: int64(len(manifest)), Platform: &platform, Annotations: map[string]string{AnnotationImageName: img.Ref}}}})
	if err != nil {
		return err
	}
	blobs := [][]byte{manifest, config}
	if img.SignedBy != nil {
		var extra [][]byte
		if index, extra, err = addSignature(index, img.SignedBy, manifest); err != nil {
			return err
		}
		blobs = append(blobs, extra...)
	}
	layout, _ := json.Marshal(ocispec.ImageLayout{Version: ocispec.ImageLayoutVersion})
	if err := writeFile(tw, ocispec.ImageLayoutFile, 0o644, layout); err != nil {
		return err
	}
	for _, b := range blobs {
		if err := writeFile(tw, blobPath(digest.FromBytes(b)), 0o644, b); err != nil {
			return err
		}
	}
	for _, l := range layers {
		if err := copyBlob(tw, blobPath(l.digest), l); err != nil {
			return err
		}
	}
	return writeFile(tw, ocispec.ImageIndexFile, 0o644, index) // last, as `docker save` puts its manifest
}

// addSignature signs manifest with signer and returns index with the
// bundle's referrer manifest added, and the blobs to write (the referrer,
// its empty config, the bundle).
func addSignature(index []byte, signer *imagesigtest.Signer, manifest []byte) ([]byte, [][]byte, error) {
	subject := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.FromBytes(manifest), Size: int64(len(manifest))}
	bundle, err := signer.SignDigest(subject.Digest, imagesigtest.CosignSignPredicate)
	if err != nil {
		return nil, nil, err
	}
	ref, blobs, err := imagesigtest.Referrer(subject, bundle)
	if err != nil {
		return nil, nil, err
	}
	var idx ocispec.Index
	if err := json.Unmarshal(index, &idx); err != nil {
		return nil, nil, err
	}
	idx.Manifests = append(idx.Manifests, ref.Desc)
	if index, err = json.Marshal(idx); err != nil {
		return nil, nil, err
	}
	out := [][]byte{ref.Data}
	for _, b := range blobs {
		out = append(out, b.Data)
	}
	return index, out, nil
}

func writeDockerLayout(tw *tar.Writer, img AppImage, layers []blobFile) error {
	config, err := imageConfig(img, layers)
	if err != nil {
		return err
	}
	configName := digest.FromBytes(config).Encoded() + ".json"
	entry := struct {
		Config   string
		RepoTags []string
		Layers   []string
	}{Config: configName, RepoTags: []string{img.Ref}}
	if err := writeFile(tw, configName, 0o644, config); err != nil {
		return err
	}
	for _, l := range layers {
		name := l.digest.Encoded() + "/layer.tar"
		if err := copyBlob(tw, name, l); err != nil {
			return err
		}
		entry.Layers = append(entry.Layers, name)
	}
	manifest, err := json.Marshal([]any{entry})
	if err != nil {
		return err
	}
	return writeFile(tw, "manifest.json", 0o644, manifest)
}
