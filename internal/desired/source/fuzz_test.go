package source

import (
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/podhost/podhost/internal/desired/manifest"
	"github.com/podhost/podhost/internal/model/wellknown"
)

// FuzzDecodeURL: the manifest URL's decoder on any response body. It ends
// in time, and a body it accepts holds at least one document, does not
// end with a separator, and decodes to what DecodeObjects gives for the
// body with its lists flattened.
//
//	go test -run='^$' -fuzz='^FuzzDecodeURL$' -fuzztime=5m ./internal/desired/source
func FuzzDecodeURL(f *testing.F) {
	f.Add([]byte(podYAML("web", "img:1") + "---\n" + podYAML("api", "img:1")))
	f.Add([]byte(`{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a"},"spec":{"containers":[{"name":"c","image":"i:1"}]}}]}`))
	f.Add([]byte(`{"apiVersion":"v1","kind":"List","items":[]}`))
	f.Add([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {k: v}\n---\napiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData: {k: v}\n"))
	f.Add([]byte(podYAML("web", "img:1") + "---\n"))
	f.Add([]byte(""))
	f.Add([]byte("apiVersion: v2\nkind: List\nitems: []\n"))
	f.Fuzz(func(t *testing.T, body []byte) {
		start := time.Now()
		objs, err := decodeURL("https://h/pods", body)
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("decodeURL of %d bytes took %v", len(body), d)
		}
		if err != nil {
			if objs.Pods != nil || objs.ConfigMaps != nil || objs.Secrets != nil {
				t.Fatal("objects and an error")
			}
			if !strings.HasPrefix(err.Error(), "pods: ") && !strings.HasPrefix(err.Error(), "https://h/pods: ") {
				t.Fatalf("error does not name the URL: %q", err)
			}
			return
		}
		if docs, err := manifest.Docs(body); err != nil || len(docs) == 0 || endsWithSeparator(body) {
			t.Fatalf("accepted a body without a document, or cut after a separator: %d docs, %v", len(docs), err)
		}
		x, err := manifest.ExpandLists("https://h/pods", body)
		if err != nil {
			t.Fatal(err)
		}
		want, err := manifest.DecodeObjects("https://h/pods", x.Data)
		if err != nil || len(want.Pods) != len(objs.Pods) || len(want.ConfigMaps) != len(objs.ConfigMaps) || len(want.Secrets) != len(objs.Secrets) {
			t.Fatalf("decodeURL gave %d/%d/%d objects; the flattened body %v", len(objs.Pods), len(objs.ConfigMaps), len(objs.Secrets), err)
		}
	})
}

// FuzzDecodeFluxLayer: a manifest artifact's layer decoder on any bytes
// (the registry's, when no signature is required). It ends in time, an
// error names no object, and what it accepts has every object's
// config-source set to the artifact.
//
//	go test -run='^$' -fuzz='^FuzzDecodeFluxLayer$' -fuzztime=5m ./internal/desired/source
func FuzzDecodeFluxLayer(f *testing.F) {
	for _, files := range []fstest.MapFS{
		{"web.yaml": {Data: []byte(podYAML("web", "img:1"))}, "sub/api.yml": {Data: []byte(podYAML("api", "img:1"))}},
		{"none.json": {Data: []byte(`{"apiVersion":"v1","kind":"List","items":[]}`)}, "README.md": {Data: []byte("x")}},
		{"cm.yaml": {Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {k: v}\n")}},
	} {
		_, _, layer, err := PackFlux(files, nil)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(layer)
	}
	f.Add([]byte{0x1f, 0x8b})
	f.Fuzz(func(t *testing.T, layer []byte) {
		start := time.Now()
		objs, err := DecodeFluxLayer("oci://r.example/p:1", layer)
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("DecodeFluxLayer of %d bytes took %v", len(layer), d)
		}
		if err != nil {
			if objs.Pods != nil || objs.ConfigMaps != nil || objs.Secrets != nil {
				t.Fatal("objects and an error")
			}
			return
		}
		for _, p := range objs.Pods {
			if p.Annotations[wellknown.AnnotationConfigSource] != "oci://r.example/p:1" {
				t.Fatalf("pod %s: config-source %q", p.Name, p.Annotations[wellknown.AnnotationConfigSource])
			}
		}
	})
}
