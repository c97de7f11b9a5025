package openapi

import (
	"bytes"
	"compress/gzip"
	"crypto/sha512"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

// servedGroupVersions: the v3 documents kubectl fetches for podhost's
// resources.
var servedGroupVersions = []string{"api/v1", "apis/authorization.k8s.io/v1", "apis/events.k8s.io/v1", "apis/metrics.k8s.io/v1beta1"}

func TestEmbeddedDocuments(t *testing.T) {
	idx, err := index()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range slices.Sorted(maps.Keys(idx)) {
		b, err := idx[name].bytes()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if sum := fmt.Sprintf("%X", sha512.Sum512(b)); sum != idx[name].hash {
			t.Errorf("%s: SHA-512 %s, SHA512SUMS says %s", name, sum, idx[name].hash)
		}
		if int64(len(b)) != idx[name].size() {
			t.Errorf("%s: %d bytes, gzip trailer says %d", name, len(b), idx[name].size())
		}
		if strings.HasSuffix(name, ".json") && !json.Valid(b) {
			t.Errorf("%s: not valid JSON", name)
		}
	}
	// The index lists every v3 document, with its hash, and nothing else.
	var v3 struct {
		Paths map[string]struct {
			ServerRelativeURL string `json:"serverRelativeURL"`
		} `json:"paths"`
	}
	b, err := idx["v3.json"].bytes()
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &v3); err != nil {
		t.Fatal(err)
	}
	var docs []string
	for name, f := range idx {
		if p, ok := strings.CutPrefix(name, "v3/"); ok {
			p = strings.TrimSuffix(p, ".json")
			docs = append(docs, p)
			if got, want := v3.Paths[p].ServerRelativeURL, serverRelativeURL(p, f.hash); got != want {
				t.Errorf("index: %s: %q, want %q", p, got, want)
			}
		}
	}
	if got, want := slices.Sorted(maps.Keys(v3.Paths)), slices.Sorted(slices.Values(docs)); !slices.Equal(got, want) {
		t.Errorf("index lists %v, embedded %v", got, want)
	}
	for _, gv := range servedGroupVersions {
		if !slices.Contains(docs, gv) {
			t.Errorf("no v3 document for %s", gv)
		}
	}
	for _, name := range []string{"v2.json", "v2.pb", "smd-schema.yaml"} {
		if _, ok := idx[name]; !ok {
			t.Errorf("%s is not embedded", name)
		}
	}
}

// get serves one request; hdr are header name, value pairs.
func get(t *testing.T, target string, hdr ...string) *http.Response {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, target, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	Handler().ServeHTTP(rec, req)
	return rec.Result()
}

func body(t *testing.T, resp *http.Response) []byte {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func hashOf(t *testing.T, name string) string {
	t.Helper()
	f, err := doc(name)
	if err != nil {
		t.Fatal(err)
	}
	return f.hash
}

func TestV3Index(t *testing.T) {
	resp := get(t, "/openapi/v3")
	b := body(t, resp)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET /openapi/v3: %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if got, want := resp.Header.Get("Etag"), fmt.Sprintf("%q", fmt.Sprintf("%X", sha512.Sum512(b))); got != want {
		t.Errorf("ETag %s, want %s", got, want)
	}
	if !bytes.Contains(b, []byte(`"api/v1":{"serverRelativeURL":"/openapi/v3/api/v1?hash=`+hashOf(t, "v3/api/v1.json")+`"}`)) {
		t.Errorf("index does not point to api/v1 with its hash: %.300s", b)
	}
}

func TestV3DocumentCaching(t *testing.T) {
	hash := hashOf(t, "v3/apis/events.k8s.io/v1.json")
	for _, tc := range []struct {
		query, cacheControl string
		code                int
	}{
		{"", "no-cache, private", http.StatusOK},
		{"?hash=" + hash, "public, immutable", http.StatusOK},
		{"?hash=0123ABCD", "", http.StatusMovedPermanently},
	} {
		resp := get(t, "/openapi/v3/apis/events.k8s.io/v1"+tc.query)
		b := body(t, resp)
		if resp.StatusCode != tc.code {
			t.Errorf("%s: %d, want %d", tc.query, resp.StatusCode, tc.code)
			continue
		}
		if tc.code == http.StatusMovedPermanently {
			if got, want := resp.Header.Get("Location"), "/openapi/v3/apis/events.k8s.io/v1?hash="+hash; got != want {
				t.Errorf("%s: redirected to %q, want %q", tc.query, got, want)
			}
			continue
		}
		if got := resp.Header.Get("Cache-Control"); got != tc.cacheControl {
			t.Errorf("%s: Cache-Control %q, want %q", tc.query, got, tc.cacheControl)
		}
		if got, want := resp.Header.Get("Etag"), `"`+hash+`"`; got != want {
			t.Errorf("%s: ETag %s, want %s", tc.query, got, want)
		}
		if got := fmt.Sprintf("%X", sha512.Sum512(b)); got != hash {
			t.Errorf("%s: body's SHA-512 %s, want %s", tc.query, got, hash)
		}
	}
	if resp := get(t, "/openapi/v3/apis/events.k8s.io/v1", "If-None-Match", `"`+hash+`"`); resp.StatusCode != http.StatusNotModified {
		t.Errorf("If-None-Match the ETag: %d, want 304", resp.StatusCode)
	}
}

func TestNotServed(t *testing.T) {
	for _, tc := range []struct {
		target, accept string
		code           int
	}{
		{"/openapi/v3/apis/networking.k8s.io/v1", "", http.StatusNotFound},
		{"/openapi/v3/", "", http.StatusNotFound},
		{"/openapi/v3/../v2", "", http.StatusNotFound},
		{"/openapi/v4", "", http.StatusNotFound},
		{"/openapi/v3/api/v1", "application/com.github.proto-openapi.spec.v3.v1.0+protobuf", http.StatusNotAcceptable},
		{"/openapi/v2", "text/html", http.StatusNotAcceptable},
	} {
		if resp := get(t, tc.target, "Accept", tc.accept); resp.StatusCode != tc.code {
			t.Errorf("GET %s (Accept %q): %d, want %d", tc.target, tc.accept, resp.StatusCode, tc.code)
		}
	}
	rec := httptest.NewRecorder()
	Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/openapi/v2", nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST /openapi/v2: %d, want 405", rec.Code)
	}
}

func TestV2ContentTypes(t *testing.T) {
	for _, tc := range []struct{ accept, contentType, doc string }{
		{"", "application/json", "v2.json"},
		{"application/json", "application/json", "v2.json"},
		// client-go's discovery client (OpenAPISchema)
		{"application/com.github.proto-openapi.spec.v2@v1.0+protobuf", mimeV2Protobuf, "v2.pb"},
		{"application/com.github.proto-openapi.spec.v2.v1.0+protobuf", mimeV2Protobuf, "v2.pb"},
		{"application/com.github.proto-openapi.spec.v2.v1.0+protobuf;q=0.5, application/json", "application/json", "v2.json"},
	} {
		resp := get(t, "/openapi/v2", "Accept", tc.accept)
		b := body(t, resp)
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != tc.contentType {
			t.Errorf("Accept %q: %d %q, want 200 %q", tc.accept, resp.StatusCode, resp.Header.Get("Content-Type"), tc.contentType)
			continue
		}
		if got := fmt.Sprintf("%X", sha512.Sum512(b)); got != hashOf(t, tc.doc) {
			t.Errorf("Accept %q: body is not %s", tc.accept, tc.doc)
		}
		if got, want := resp.Header.Get("Etag"), `"`+hashOf(t, "v2.json")+`"`; got != want {
			t.Errorf("Accept %q: ETag %s, want the JSON's %s", tc.accept, got, want)
		}
	}
}

func TestGzip(t *testing.T) {
	plain := get(t, "/openapi/v3/api/v1")
	raw := body(t, plain)
	if plain.Header.Get("Content-Encoding") != "" || plain.Header.Get("Content-Length") != fmt.Sprint(len(raw)) {
		t.Errorf("without Accept-Encoding: Content-Encoding %q, Content-Length %s for %d bytes",
			plain.Header.Get("Content-Encoding"), plain.Header.Get("Content-Length"), len(raw))
	}
	zipped := get(t, "/openapi/v3/api/v1", "Accept-Encoding", "deflate, gzip;q=0.8")
	gz := body(t, zipped)
	if zipped.Header.Get("Content-Encoding") != "gzip" || zipped.Header.Get("Content-Length") != fmt.Sprint(len(gz)) {
		t.Fatalf("Accept-Encoding gzip: Content-Encoding %q, Content-Length %s for %d bytes",
			zipped.Header.Get("Content-Encoding"), zipped.Header.Get("Content-Length"), len(gz))
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		t.Fatal(err)
	}
	unzipped, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(unzipped, raw) || len(gz) >= len(raw) {
		t.Errorf("gzipped body (%d bytes) is not the plain one (%d bytes) compressed", len(gz), len(raw))
	}
	if !slices.Contains(zipped.Header.Values("Vary"), "Accept-Encoding") {
		t.Errorf("Vary %q lacks Accept-Encoding", zipped.Header.Values("Vary"))
	}
}

func TestAcceptsGzip(t *testing.T) {
	for h, want := range map[string]bool{
		"":                   false,
		"gzip":               true,
		"GZIP":               true,
		"deflate, gzip":      true,
		"gzip;q=0":           false,
		"gzip; q=0.001":      true,
		"*":                  true,
		"gzip;q=0, *":        false,
		"identity":           false,
		"br, *;q=0":          false,
		"x-gzip":             true,
		"deflate,gzip;q=1.0": true,
	} {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.Header.Set("Accept-Encoding", h)
		if got := acceptsGzip(req); got != want {
			t.Errorf("Accept-Encoding %q: %v, want %v", h, got, want)
		}
	}
}
