//go:build integration

package testenv

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// ImageRef is the name of the offline test image. It is not ":latest" on
// purpose: the default pull policy for :latest is Always, and no registry is
// reachable from the test machines.
const ImageRef = "podhost.test/busybox:1"

// imageFormat changes whenever BuildImage's output changes for the same
// busybox binary; it is part of the cache key.
const imageFormat = "podhost-busybox-image/v1"

// AnnotationImageName is containerd's annotation for the full image name of
// an index entry (images.AnnotationImageName). Both client.Import and
// `ctr images import` name the image after it verbatim, whatever translator
// they apply to org.opencontainers.image.ref.name.
const AnnotationImageName = "io.containerd.image.name"

// BusyboxPath is the statically linked busybox the test image is built from
// (Debian package busybox-static). PODHOST_TEST_BUSYBOX overrides it.
func BusyboxPath() string {
	if p := os.Getenv("PODHOST_TEST_BUSYBOX"); p != "" {
		return p
	}
	return "/bin/busybox"
}

// epoch is the mtime of every file in the layer and the image's creation
// time: fixed so that the same busybox always gives the same digests.
var epoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// BuildImage writes the test image, an OCI image layout tarball named
// ImageRef, into dir (created if needed) and returns its path and ref.
//
// The image has one uncompressed layer: /bin/busybox from busybox-static,
// a symlink for every applet (`busybox --list-full`: /bin, /sbin, /usr/bin,
// /usr/sbin), /etc/passwd and /etc/group with root and nobody, /tmp (1777),
// /var/www/index.html. Its config runs `sh` with a standard PATH.
//
// The output is deterministic and cached by content: the file name carries a
// hash of the busybox binary, its applet list and the format version, so a
// second call (or a second test run) only stats a file.
func BuildImage(dir string) (tarPath, ref string, err error) {
	tarPath, err = BuildImageVariant(dir, ImageVariant{})
	return tarPath, ImageRef, err
}

// ImageVariant is the test image with changes, for tests of what an image
// may carry (a crafted USER and /etc/passwd). The zero value is the test
// image itself.
type ImageVariant struct {
	// Ref names the image (default ImageRef).
	Ref string
	// User is the config's USER.
	User string
	// Passwd lines are appended to /etc/passwd (each ends with "\n").
	Passwd string
}

func (v ImageVariant) ref() string {
	if v.Ref == "" {
		return ImageRef
	}
	return v.Ref
}

// BuildImageVariant is BuildImage for a variant of the test image, cached
// under a name that also hashes the variant. Returns the tarball's path.
func BuildImageVariant(dir string, v ImageVariant) (tarPath string, err error) {
	bbPath := BusyboxPath()
	bb, err := os.ReadFile(bbPath)
	if err != nil {
		return "", fmt.Errorf("test image: read busybox (apt-get install busybox-static): %w", err)
	}
	out, err := exec.Command(bbPath, "--list-full").Output()
	if err != nil {
		return "", fmt.Errorf("test image: %s --list-full: %w", bbPath, err)
	}
	applets := strings.Fields(string(out))
	if len(applets) == 0 {
		return "", fmt.Errorf("test image: %s --list-full printed no applets", bbPath)
	}

	h := sha256.New()
	fmt.Fprintf(h, "%s\n%s\n%s\n", imageFormat, v.ref(), runtime.GOARCH)
	if v.User != "" || v.Passwd != "" {
		fmt.Fprintf(h, "user %q passwd %q\n", v.User, v.Passwd)
	}
	h.Write(bb)
	h.Write(out)
	key := hex.EncodeToString(h.Sum(nil))[:16]
	tarPath = filepath.Join(dir, "busybox-"+key+".tar")
	if st, err := os.Stat(tarPath); err == nil && st.Mode().IsRegular() && st.Size() > 0 {
		return tarPath, nil
	}

	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("test image: %w", err)
	}
	data, err := imageLayout(bb, applets, v)
	if err != nil {
		return "", fmt.Errorf("test image: %w", err)
	}
	if err := writeAtomic(dir, tarPath, data); err != nil {
		return "", fmt.Errorf("test image: %w", err)
	}
	return tarPath, nil
}

// writeAtomic writes data to path through a temp file in dir renamed into
// place: concurrent builders and interrupted runs never leave a partial
// file under the final name.
func writeAtomic(dir, path string, data []byte) error {
	tmp, err := os.CreateTemp(dir, ".busybox-*.tar.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// imageLayout returns the bytes of the OCI image layout tarball.
func imageLayout(busybox []byte, applets []string, v ImageVariant) ([]byte, error) {
	layer, err := rootfsLayer(busybox, applets, v.Passwd)
	if err != nil {
		return nil, err
	}
	layerDesc := ocispec.Descriptor{
		MediaType: ocispec.MediaTypeImageLayer,
		Digest:    digest.FromBytes(layer),
		Size:      int64(len(layer)),
	}
	platform := ocispec.Platform{OS: "linux", Architecture: runtime.GOARCH}
	created := epoch
	config, err := json.Marshal(ocispec.Image{
		Created:  &created,
		Platform: platform,
		Config: ocispec.ImageConfig{
			Env:        []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
			Cmd:        []string{"sh"},
			WorkingDir: "/",
			User:       v.User,
			Labels:     map[string]string{"org.opencontainers.image.title": "podhost test busybox"},
		},
		RootFS: ocispec.RootFS{Type: "layers", DiffIDs: []digest.Digest{layerDesc.Digest}},
		History: []ocispec.History{{
			Created:   &created,
			CreatedBy: "podhost internal/testenv.BuildImage (busybox-static)",
		}},
	})
	if err != nil {
		return nil, err
	}
	configDesc := ocispec.Descriptor{
		MediaType: ocispec.MediaTypeImageConfig,
		Digest:    digest.FromBytes(config),
		Size:      int64(len(config)),
	}
	manifest, err := json.Marshal(ocispec.Manifest{
		Versioned: specs.Versioned{SchemaVersion: 2},
		MediaType: ocispec.MediaTypeImageManifest,
		Config:    configDesc,
		Layers:    []ocispec.Descriptor{layerDesc},
	})
	if err != nil {
		return nil, err
	}
	manifestDesc := ocispec.Descriptor{
		MediaType: ocispec.MediaTypeImageManifest,
		Digest:    digest.FromBytes(manifest),
		Size:      int64(len(manifest)),
		Platform:  &platform,
		Annotations: map[string]string{
			AnnotationImageName: v.ref(),
			// OCI's ref.name is the tag only; containerd uses the annotation
			// above for the full name.
			ocispec.AnnotationRefName: v.ref()[strings.LastIndex(v.ref(), ":")+1:],
		},
	}
	index, err := json.Marshal(ocispec.Index{
		Versioned: specs.Versioned{SchemaVersion: 2},
		MediaType: ocispec.MediaTypeImageIndex,
		Manifests: []ocispec.Descriptor{manifestDesc},
	})
	if err != nil {
		return nil, err
	}
	layout, err := json.Marshal(ocispec.ImageLayout{Version: ocispec.ImageLayoutVersion})
	if err != nil {
		return nil, err
	}

	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, d := range []string{"blobs/", "blobs/sha256/"} {
		if err := tw.WriteHeader(dirHeader(d, 0o755)); err != nil {
			return nil, err
		}
	}
	files := []struct {
		name string
		data []byte
	}{
		{ocispec.ImageLayoutFile, layout},
		{ocispec.ImageIndexFile, index},
		{blobPath(manifestDesc.Digest), manifest},
		{blobPath(configDesc.Digest), config},
		{blobPath(layerDesc.Digest), layer},
	}
	for _, f := range files {
		if err := writeFile(tw, f.name, 0o644, f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func blobPath(d digest.Digest) string {
	return "blobs/" + d.Algorithm().String() + "/" + d.Encoded()
}

// rootfsLayer returns the uncompressed layer tarball.
func rootfsLayer(busybox []byte, applets []string, passwd string) ([]byte, error) {
	dirs := map[string]int64{
		"bin": 0o755, "dev": 0o755, "etc": 0o755, "proc": 0o555, "root": 0o700,
		"run": 0o755, "sbin": 0o755, "sys": 0o555, "tmp": 0o1777, "usr": 0o755,
		"usr/bin": 0o755, "usr/sbin": 0o755, "var": 0o755, "var/www": 0o755,
		"var/tmp": 0o1777, "home": 0o755,
	}
	links := map[string]bool{}
	for _, a := range applets {
		a = strings.TrimPrefix(path.Clean("/"+a), "/")
		if a == "" || a == "bin/busybox" || strings.Contains(a, "..") {
			continue
		}
		links[a] = true
		for d := path.Dir(a); d != "." && d != "/"; d = path.Dir(d) {
			if _, ok := dirs[d]; !ok {
				dirs[d] = 0o755
			}
		}
	}
	files := map[string]struct {
		mode int64
		data []byte
	}{
		"bin/busybox": {0o755, busybox},
		"etc/passwd": {0o644, []byte("root:x:0:0:root:/root:/bin/sh\n" +
			"nobody:x:65534:65534:nobody:/nonexistent:/bin/false\n" + passwd)},
		"etc/group":          {0o644, []byte("root:x:0:\nnobody:x:65534:\n")},
		"etc/nsswitch.conf":  {0o644, []byte("hosts: files dns\n")},
		"var/www/index.html": {0o644, []byte("hello from podhost\n")},
	}

	var names []string
	for d := range dirs {
		names = append(names, d)
	}
	for f := range files {
		names = append(names, f)
	}
	for l := range links {
		if _, isFile := files[l]; !isFile {
			names = append(names, l)
		}
	}
	sort.Strings(names)

	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, n := range names {
		var err error
		switch {
		case dirs[n] != 0:
			err = tw.WriteHeader(dirHeader(n+"/", dirs[n]))
		case files[n].data != nil:
			err = writeFile(tw, n, files[n].mode, files[n].data)
		default:
			hdr := baseHeader(n, 0o777)
			hdr.Typeflag = tar.TypeSymlink
			hdr.Linkname = "/bin/busybox"
			err = tw.WriteHeader(hdr)
		}
		if err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func baseHeader(name string, mode int64) *tar.Header {
	return &tar.Header{
		Name:    name,
		Mode:    mode,
		ModTime: epoch,
		Uname:   "root",
		Gname:   "root",
		Format:  tar.FormatPAX,
	}
}

func dirHeader(name string, mode int64) *tar.Header {
	hdr := baseHeader(name, mode)
	hdr.Typeflag = tar.TypeDir
	return hdr
}

func writeFile(tw *tar.Writer, name string, mode int64, data []byte) error {
	hdr := baseHeader(name, mode)
	hdr.Typeflag = tar.TypeReg
	hdr.Size = int64(len(data))
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	_, err := io.Copy(tw, bytes.NewReader(data))
	return err
}
