package runtime

import (
	"context"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// fakeRegistry is a plain-HTTP registry on 127.0.0.1 that serves one
// manifest and, if user is set, demands basic auth.
func fakeRegistry(t *testing.T, user, pass string) (host string, dgst digest.Digest) {
	manifest := []byte(`{"schemaVersion":2,"mediaType":"` + ocispec.MediaTypeImageManifest + `"}`)
	dgst = digest.FromBytes(manifest)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if user != "" {
			if u, p, ok := r.BasicAuth(); !ok || u != user || p != pass {
				w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
		}
		if !strings.HasPrefix(r.URL.Path, "/v2/app/manifests/") {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", ocispec.MediaTypeImageManifest)
		w.Header().Set("Docker-Content-Digest", dgst.String())
		_, _ = w.Write(manifest)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://"), dgst
}

func TestResolverPlainHTTPLocalhost(t *testing.T) {
	host, dgst := fakeRegistry(t, "", "")
	r := &Runtime{HostsDir: t.TempDir()}
	_, desc, err := r.resolver(context.Background()).Resolve(context.Background(), host+"/app:1")
	if err != nil {
		t.Fatal(err)
	}
	if desc.Digest != dgst {
		t.Fatalf("digest %s, want %s", desc.Digest, dgst)
	}
}

func TestResolverUsesAuthFile(t *testing.T) {
	host, _ := fakeRegistry(t, "alice", "pw")
	auth := filepath.Join(t.TempDir(), "auth.json")
	enc := base64.StdEncoding.EncodeToString([]byte("alice:pw"))
	if err := os.WriteFile(auth, []byte(`{"auths":{"`+host+`":{"auth":"`+enc+`"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	r := &Runtime{HostsDir: t.TempDir()}
	if _, _, err := r.resolver(context.Background()).Resolve(context.Background(), host+"/app:1"); err == nil {
		t.Fatal("resolved without credentials")
	}
	r.AuthFiles = []string{auth}
	if _, _, err := r.resolver(context.Background()).Resolve(context.Background(), host+"/app:1"); err != nil {
		t.Fatal(err)
	}
}
