package runtime

import (
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"testing"

	"github.com/podhost/podhost/internal/model/runtimeapi"
)

// A pod's imagePullSecrets (docker config documents in the pull's ctx) are
// tried before the auth files.
func TestResolverUsesPodPullSecretsFirst(t *testing.T) {
	host, _ := fakeRegistry(t, "bob", "right")
	doc := func(pass string) []byte {
		enc := base64.StdEncoding.EncodeToString([]byte("bob:" + pass))
		return []byte(`{"auths":{"` + host + `":{"auth":"` + enc + `"}}}`)
	}
	auth := filepath.Join(t.TempDir(), "auth.json")
	if err := os.WriteFile(auth, doc("wrong"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := &Runtime{HostsDir: t.TempDir(), AuthFiles: []string{auth}}
	if _, _, err := r.resolver(context.Background()).Resolve(context.Background(), host+"/app:1"); err == nil {
		t.Fatal("resolved with the wrong auth file")
	}
	ctx := runtimeapi.WithPullAuth(context.Background(), [][]byte{[]byte("{}"), doc("right")})
	if _, _, err := r.resolver(ctx).Resolve(ctx, host+"/app:1"); err != nil {
		t.Fatalf("pod pull secret not used: %v", err)
	}
}
