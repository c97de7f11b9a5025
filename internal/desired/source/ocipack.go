package source

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io/fs"
	"time"

	digest "github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// PackFlux builds a Flux artifact of the files of fsys (a manifest dir:
// every regular file but dotfiles and dot dirs, in walk order, with zero times and owners, so the same files make the same
// digest): the manifest, its config and its one layer. annotations go on
// the manifest (org.opencontainers.image.source, .revision, .created).
func PackFlux(fsys fs.FS, annotations map[string]string) (man []byte, config, layer []byte, err error) {
	if layer, err = packLayer(fsys); err != nil {
		return nil, nil, nil, err
	}
	diffID, err := layerDiffID(layer)
	if err != nil {
		return nil, nil, nil, err
	}
	// The config of an empty image with the layer, as Flux (go-containerregistry) writes it.
	config, err = json.Marshal(ocispec.Image{RootFS: ocispec.RootFS{Type: "layers", DiffIDs: []digest.Digest{diffID}}})
	if err != nil {
		return nil, nil, nil, err
	}
	m := ocispec.Manifest{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageManifest,
		Config:      ocispec.Descriptor{MediaType: FluxConfigMediaType, Digest: digest.FromBytes(config), Size: int64(len(config))},
		Layers:      []ocispec.Descriptor{{MediaType: FluxContentMediaType, Digest: digest.FromBytes(layer), Size: int64(len(layer))}},
		Annotations: annotations}
	if man, err = json.Marshal(m); err != nil {
		return nil, nil, nil, err
	}
	return man, config, layer, nil
}

func packLayer(fsys fs.FS) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	tw := tar.NewWriter(zw)
	err = fs.WalkDir(fsys, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch {
		case name == ".":
			return nil
		case d.Name()[0] == '.' && d.IsDir(): // .git
			return fs.SkipDir
		case d.Name()[0] == '.' || !d.Type().IsRegular() && !d.IsDir():
			return nil
		}
		h := &tar.Header{Name: name, Mode: 0o644, ModTime: time.Unix(0, 0), Format: tar.FormatPAX}
		if d.IsDir() {
			h.Typeflag, h.Name, h.Mode = tar.TypeDir, name+"/", 0o755
			return tw.WriteHeader(h)
		}
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			return err
		}
		h.Typeflag, h.Size = tar.TypeReg, int64(len(data))
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		_, err = tw.Write(data)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("pack: %w", err)
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// layerDiffID is the digest of the layer uncompressed.
func layerDiffID(layer []byte) (digest.Digest, error) {
	zr, err := gzip.NewReader(bytes.NewReader(layer))
	if err != nil {
		return "", err
	}
	return digest.SHA256.FromReader(zr)
}
