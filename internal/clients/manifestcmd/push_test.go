package manifestcmd

import (
	"bytes"
	"context"
	"crypto/elliptic"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sigstore/sigstore/pkg/cryptoutils"

	"github.com/podhost/podhost/internal/clients/cmdutil"
	"github.com/podhost/podhost/internal/host/runtime"
)

// Push refuses what a box would refuse before it contacts the registry:
// one error naming the file and the field, nothing pushed; a signing key
// that does not load (wrong password, missing) is refused before too.
func TestPushRefusesBeforeContactingTheRegistry(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	contacted := make(chan struct{}, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			contacted <- struct{}{}
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	ref := "oci://" + ln.Addr().String() + "/fleet/pods:v1"

	dir := t.TempDir()
	bad := "apiVersion: v1\nkind: Pod\nmetadata: {name: Bad_Name}\nspec: {containers: [{name: c, image: busybox}]}\n"
	if err := os.WriteFile(filepath.Join(dir, "web.yaml"), []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "web.yaml")
	good := t.TempDir()
	if err := os.WriteFile(filepath.Join(good, "web.yaml"), []byte(strings.ReplaceAll(bad, "Bad_Name", "web")), 0o644); err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(t.TempDir(), "cosign.key")
	priv, _, err := cryptoutils.GeneratePEMEncodedECDSAKeyPair(elliptic.P256(), cryptoutils.StaticPasswordFunc([]byte("right")))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(key, priv, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ dir, ref, key, want string }{
		{dir, ref, "", "web.yaml: metadata.name: Invalid value: \"Bad_Name\""},
		{dir, ref, "", "nothing pushed"},
		{file, ref, "", "web.yaml: not a directory"},
		{dir, "oci://" + ln.Addr().String() + "/fleet/pods", "", "no tag or digest"},
		{dir, "https://example.com/pods:v1", "", "want oci://REGISTRY/REPOSITORY:TAG"},
		{good, ref, key, "cosign.key: signing key: "},
		{good, ref, key + ".missing", "cosign.key.missing: no such file"},
	} {
		var out, errOut bytes.Buffer
		err := Push(context.Background(), PushOptions{Dir: c.dir, Ref: c.ref, Key: c.key, Password: []byte("wrong"), Registry: runtime.Registry{HostsDir: t.TempDir()}},
			cmdutil.IOStreams{Out: &out, ErrOut: &errOut})
		if err == nil || !strings.Contains(err.Error(), c.want) || out.Len() > 0 {
			t.Errorf("Push(%s, %s) = %v (out %q), want an error with %q", c.dir, c.ref, err, out.String(), c.want)
		}
	}
	select {
	case <-contacted:
		t.Error("the registry was contacted")
	default:
	}
}
