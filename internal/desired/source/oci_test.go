package source

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	digest "github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/podhost/podhost/internal/model/runtimeapi"
	"github.com/podhost/podhost/internal/model/wellknown"
)

const testOCIRef = "registry.example:5000/fleet/pods:v1"

// fakeRegistry serves one tag; it records what was fetched.
type fakeRegistry struct {
	mu      sync.Mutex
	tag     string // digest the tag names
	blobs   map[string]runtimeapi.Artifact
	down    error
	fetched []string
}

// push makes files the artifact the tag names; it returns its digest.
func (r *fakeRegistry) push(t *testing.T, files map[string]string) string {
	t.Helper()
	fsys := fstest.MapFS{}
	for name, data := range files {
		fsys[name] = &fstest.MapFile{Data: []byte(data), Mode: 0o644}
	}
	man, config, layer, err := PackFlux(fsys, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r.pushRaw(t, man, config, layer)
}

func (r *fakeRegistry) pushRaw(t *testing.T, man, config, layer []byte) string {
	t.Helper()
	a := runtimeapi.Artifact{Digest: digest.FromBytes(man).String(), Config: config, Layers: [][]byte{layer}}
	if err := json.Unmarshal(man, &a.Manifest); err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.blobs == nil {
		r.blobs = map[string]runtimeapi.Artifact{}
	}
	r.blobs[a.Digest], r.tag, r.down = a, a.Digest, nil
	return a.Digest
}

func (r *fakeRegistry) ResolveArtifact(_ context.Context, ref string) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if ref != testOCIRef {
		return "", errors.New("unknown ref " + ref)
	}
	return r.tag, r.down
}

func (r *fakeRegistry) FetchArtifact(_ context.Context, ref, dgst string, maxBytes int64) (runtimeapi.Artifact, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fetched = append(r.fetched, dgst)
	a, ok := r.blobs[dgst]
	if !ok || ref != testOCIRef || maxBytes != MaxArtifactBytes {
		return runtimeapi.Artifact{}, errors.New("not found")
	}
	return a, nil
}

// fakeVerifier accepts the digests in ok.
type fakeVerifier struct{ ok map[string]bool }

func (v fakeVerifier) VerifyArtifact(_ context.Context, ref, dgst string) error {
	if ref != testOCIRef || !v.ok[dgst] {
		return errors.New("image signature verification failed: no valid signature")
	}
	return nil
}

func newOCISource(t *testing.T, reg *fakeRegistry, v ArtifactVerifier, store LastGood) *OCISource {
	t.Helper()
	o, err := NewOCI(OCIConfig{Ref: OCIScheme + testOCIRef, Registry: reg, Verifier: v, LastGood: store})
	if err != nil {
		t.Fatal(err)
	}
	o.loadStored()
	return o
}

func pollOCI(o *OCISource) string {
	o.poll(context.Background())
	return summary(o.snapshot())
}

// The artifact's pods; a new signed version replaces them; a version
// without a valid signature is never fetched and keeps the last good set,
// as a registry that is down does; a restart while it is down runs the
// stored copy.
func TestOCISource(t *testing.T) {
	reg := &fakeRegistry{}
	v := fakeVerifier{ok: map[string]bool{}}
	db := openStore(t)
	o := newOCISource(t, reg, v, db)

	d1 := reg.push(t, map[string]string{"web.yaml": podYAML("web", "img:1"), "sub/api.yml": podYAML("api", "img:1"), "README.md": "not a manifest"})
	v.ok[d1] = true
	if got := pollOCI(o); got != "default/api=img:1 default/web=img:1" {
		t.Fatalf("first = %q", got)
	}
	if src := o.snapshot().Pods[0].Annotations[wellknown.AnnotationConfigSource]; src != "oci://"+testOCIRef {
		t.Errorf("config-source = %q", src)
	}
	pollOCI(o)
	if n := len(reg.fetched); n != 1 {
		t.Errorf("fetched %d times, want 1: an unchanged digest is not fetched again", n)
	}

	d2 := reg.push(t, map[string]string{"web.yaml": podYAML("web", "img:2")})
	v.ok[d2] = true
	if got := pollOCI(o); got != "default/web=img:2" {
		t.Fatalf("signed update = %q", got)
	}

	d3 := reg.push(t, map[string]string{"web.yaml": podYAML("web", "img:3")})
	if got := pollOCI(o); got != "default/web=img:2 ERR pods:v1 kept=default/web" {
		t.Fatalf("bad signature = %q", got)
	}
	if err := o.snapshot().Errors[0].Err.Error(); !strings.Contains(err, "no valid signature") || !strings.Contains(err, "oci://"+testOCIRef) {
		t.Errorf("error = %q", err)
	}
	for _, d := range reg.fetched {
		if d == d3 {
			t.Errorf("the unsigned artifact %s was fetched", d3)
		}
	}

	reg.mu.Lock()
	reg.down = errors.New("connection refused")
	reg.mu.Unlock()
	if got := pollOCI(newOCISource(t, reg, v, db)); got != "default/web=img:2 ERR pods:v1 kept=default/web" {
		t.Fatalf("restart while down = %q", got)
	}
	// Signed later (cosign sign after the push): the next poll takes it.
	reg.pushRaw(t, mustJSON(t, reg.blobs[d3].Manifest), reg.blobs[d3].Config, reg.blobs[d3].Layers[0])
	v.ok[d3] = true
	if got := pollOCI(o); got != "default/web=img:3" {
		t.Fatalf("signed later = %q", got)
	}
	// Only a file with an empty List removes every pod (a README alone keeps them: TestOCISourceRefusals).
	v.ok[reg.push(t, map[string]string{"none.yaml": `{"apiVersion":"v1","kind":"List","items":[]}`})] = true
	if got := pollOCI(o); got != "" {
		t.Fatalf("empty List = %q", got)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Every way an artifact can be wrong keeps the last good set, with one
// error naming the reference and what is wrong.
func TestOCISourceRefusals(t *testing.T) {
	bigFile := "# " + strings.Repeat("x", 1<<20) + "\n" + podYAML("web", "img:9")
	cases := []struct {
		name  string
		push  func(t *testing.T, reg *fakeRegistry)
		error string
	}{
		{"invalid pod", func(t *testing.T, reg *fakeRegistry) {
			reg.push(t, map[string]string{"a.yaml": podYAML("Bad_Name", "img:2")})
		}, "a.yaml: "},
		{"pod in two files", func(t *testing.T, reg *fakeRegistry) {
			reg.push(t, map[string]string{"a.yaml": podYAML("web", "img:2"), "b.yaml": podYAML("web", "img:3")})
		}, "b.yaml: pod default/web: also declared by a.yaml"},
		{"file over 1 MiB", func(t *testing.T, reg *fakeRegistry) {
			reg.push(t, map[string]string{"a.yaml": bigFile})
		}, "more than the 1048576-byte limit"},
		{"gzip bomb", func(t *testing.T, reg *fakeRegistry) {
			reg.pushRaw(t, fluxManifest(t), []byte("{}"), tarGz(t, map[string][]byte{"a.txt": make([]byte, MaxArtifactContent+1)}))
		}, "more than 8388608 bytes uncompressed"},
		{"control character in a name", func(t *testing.T, reg *fakeRegistry) {
			reg.pushRaw(t, fluxManifest(t), []byte("{}"), tarGz(t, map[string][]byte{"a\x1b[2J.yaml": []byte(podYAML("web", "img:2"))}))
		}, `entry "a\x1b[2J.yaml": name refused`},
		{"not a Flux config", func(t *testing.T, reg *fakeRegistry) {
			m := ocispec.Manifest{MediaType: ocispec.MediaTypeImageManifest, Config: ocispec.Descriptor{MediaType: ocispec.MediaTypeImageConfig},
				Layers: []ocispec.Descriptor{{MediaType: FluxContentMediaType}}}
			reg.pushRaw(t, mustJSON(t, m), []byte("{}"), tarGz(t, nil))
		}, `config media type "application/vnd.oci.image.config.v1+json": not a Flux artifact`},
		{"no manifest file", func(t *testing.T, reg *fakeRegistry) {
			reg.push(t, map[string]string{"README.md": "pods elsewhere"})
		}, "no manifest file"},
		{"not gzip", func(t *testing.T, reg *fakeRegistry) {
			reg.pushRaw(t, fluxManifest(t), []byte("{}"), []byte("plain"))
		}, "layer: not gzip"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			reg := &fakeRegistry{}
			o := newOCISource(t, reg, nil, nil)
			reg.push(t, map[string]string{"web.yaml": podYAML("web", "img:1")})
			if got := pollOCI(o); got != "default/web=img:1" {
				t.Fatalf("first = %q", got)
			}
			c.push(t, reg)
			if got := pollOCI(o); got != "default/web=img:1 ERR pods:v1 kept=default/web" {
				t.Fatalf("snapshot = %q", got)
			}
			err := o.snapshot().Errors[0].Err.Error()
			t.Log(err)
			if !strings.Contains(err, c.error) || !strings.HasPrefix(err, "oci://"+testOCIRef+": ") {
				t.Errorf("error = %q, want it to name the reference and contain %q", err, c.error)
			}
		})
	}
}

// A Secret's content never reaches the state db: the stored copy is removed.
func TestOCISourceSecretNotStored(t *testing.T) {
	reg := &fakeRegistry{}
	db := openStore(t)
	o := newOCISource(t, reg, nil, db)
	reg.push(t, map[string]string{"web.yaml": podYAML("web", "img:1")})
	pollOCI(o)
	reg.push(t, map[string]string{"web.yaml": podYAML("web", "img:1"), "s.yaml": "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\nstringData:\n  k: topsecret\n"})
	pollOCI(o)
	recs, err := db.ListManifests()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if r.Path == "oci://"+testOCIRef {
			t.Errorf("stored %d bytes under %s with a Secret in the artifact", len(r.Data), r.Path)
		}
	}
}

func TestParseOCIRef(t *testing.T) {
	for raw, want := range map[string]string{
		"oci://registry.example:5000/fleet/pods:v1":              "registry.example:5000/fleet/pods:v1",
		"oci://localhost/pods@sha256:" + strings.Repeat("a", 64): "localhost/pods@sha256:" + strings.Repeat("a", 64),
		"oci://ghcr.io/fleet/pods":                               "",
		"oci://Registry/Pods:v1":                                 "",
		"https://ghcr.io/fleet/pods:1":                           "",
	} {
		got, err := ParseOCIRef(raw)
		if got != want || (err == nil) != (want != "") {
			t.Errorf("ParseOCIRef(%q) = %q, %v; want %q", raw, got, err, want)
		}
	}
}

// PackFlux: the same files make the same digest; dotfiles are left out.
func TestPackFluxReproducible(t *testing.T) {
	fsys := fstest.MapFS{"web.yaml": {Data: []byte(podYAML("web", "img:1"))}, ".git/config": {Data: []byte("x")}}
	m1, _, layer, err := PackFlux(fsys, map[string]string{"org.opencontainers.image.source": "x"})
	if err != nil {
		t.Fatal(err)
	}
	m2, _, _, _ := PackFlux(fsys, map[string]string{"org.opencontainers.image.source": "x"})
	if !bytes.Equal(m1, m2) {
		t.Error("two packs of the same files differ")
	}
	files, err := readArtifactLayer(layer)
	if err != nil || len(files) != 1 || files[0].name != "web.yaml" {
		t.Errorf("layer files = %v, %v; want web.yaml only", files, err)
	}
}

func fluxManifest(t *testing.T) []byte {
	return mustJSON(t, ocispec.Manifest{MediaType: ocispec.MediaTypeImageManifest, Config: ocispec.Descriptor{MediaType: FluxConfigMediaType},
		Layers: []ocispec.Descriptor{{MediaType: FluxContentMediaType}}})
}

func tarGz(t *testing.T, files map[string][]byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for name, data := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(data))}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(data); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestDecodeFluxLayerAllKinds: an artifact's Deployments and Services reach
// the snapshot as a manifest dir's do (not only its pods), a name two
// files declare is refused, and the workloads' expansion is bounded over
// the whole artifact, not per file.
func TestDecodeFluxLayerAllKinds(t *testing.T) {
	deploy := func(name string, replicas int, pad int) string {
		return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: %s}
spec:
  replicas: %d
  selector: {matchLabels: {app: %s}}
  template:
    metadata: {labels: {app: %s}, annotations: {pad: "%s"}}
    spec: {containers: [{name: c, image: img:1}]}
`, name, replicas, name, name, strings.Repeat("x", pad))
	}
	svc := "apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec: {selector: {app: web}, ports: [{port: 80}]}\n"
	layer := tarGz(t, map[string][]byte{"web.yaml": []byte(deploy("web", 2, 10)), "svc.yaml": []byte(svc)})
	objs, err := DecodeFluxLayer("oci://r/x:1", layer)
	if err != nil {
		t.Fatal(err)
	}
	if len(objs.Workloads) != 1 || len(objs.Services) != 1 || len(objs.Pods) != 2 {
		t.Fatalf("workloads %d, services %d, pods %d; want 1, 1, 2", len(objs.Workloads), len(objs.Services), len(objs.Pods))
	}
	if got := objs.Services[0].Annotations[wellknown.AnnotationConfigSource]; got != "oci://r/x:1" {
		t.Errorf("the Service's config-source = %q", got)
	}
	dup := tarGz(t, map[string][]byte{"a.yaml": []byte(svc), "b.yaml": []byte(svc)})
	if _, err := DecodeFluxLayer("oci://r/x:1", dup); err == nil || !strings.Contains(err.Error(), "service default/web") {
		t.Errorf("a Service two files declare: %v", err)
	}
	// Each file stays under the per-file bound (250 pods × ~40 KB ≈ 10 MB),
	// two of them do not.
	big := tarGz(t, map[string][]byte{"a.yaml": []byte(deploy("a", 250, 40_000)), "b.yaml": []byte(deploy("b", 250, 40_000))})
	if _, err := DecodeFluxLayer("oci://r/x:1", big); err == nil || !strings.Contains(err.Error(), "expand into more than") {
		t.Errorf("two files expanding to 20 MB of pods: %v", err)
	}
}
