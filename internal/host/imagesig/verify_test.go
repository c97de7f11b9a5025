package imagesig

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	digest "github.com/opencontainers/go-digest"

	"github.com/podhost/podhost/internal/host/imagesig/imagesigtest"
	"github.com/podhost/podhost/internal/model/runtimeapi"
)

type fakeSource struct {
	bundles []runtimeapi.SignatureBundle
	err     error
	calls   int
	remote  []bool
}

func (f *fakeSource) SignatureBundles(_ context.Context, _ string, _ digest.Digest, remote bool) ([]runtimeapi.SignatureBundle, error) {
	f.calls++
	f.remote = append(f.remote, remote)
	return f.bundles, f.err
}

func newSigner(t *testing.T, dir, name string) (*imagesigtest.Signer, string) {
	t.Helper()
	s, err := imagesigtest.NewSigner()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := s.WritePublicKey(path); err != nil {
		t.Fatal(err)
	}
	return s, path
}

// bundleOf makes a SignatureBundle of a signer's answer, failing t on error.
func bundleOf(t *testing.T) func([]byte, error) runtimeapi.SignatureBundle {
	return func(b []byte, err error) runtimeapi.SignatureBundle {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return runtimeapi.SignatureBundle{Source: "test", Data: b}
	}
}

// The policy's decision, bundle by bundle: a cosign signature (DSSE) or a
// message signature of the manifest by a trusted key passes; anything
// else is refused with the reason.
func TestCheck(t *testing.T) {
	dir := t.TempDir()
	vendor, vendorKey := newSigner(t, dir, "vendor.pub")
	other, _ := newSigner(t, dir, "other.pub")
	_, spareKey := newSigner(t, dir, "spare.pub")
	manifest := []byte(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json"}`)
	dgst := digest.FromBytes(manifest)
	must := bundleOf(t)
	otherDigest := digest.FromString("another image")
	good := must(vendor.SignDigest(dgst, imagesigtest.CosignSignPredicate))
	cases := []struct {
		name    string
		keys    []string
		bundles []runtimeapi.SignatureBundle
		want    string // error substring; "" = verified
	}{
		{"cosign signature", []string{vendorKey}, []runtimeapi.SignatureBundle{good}, ""},
		{"message signature of the manifest", []string{vendorKey}, []runtimeapi.SignatureBundle{must(vendor.SignManifest(manifest))}, ""},
		{"second key signed", []string{spareKey, vendorKey}, []runtimeapi.SignatureBundle{good}, ""},
		{"a bad bundle then a good one", []string{vendorKey}, []runtimeapi.SignatureBundle{{Source: "junk", Data: []byte("{}")}, good}, ""},
		{"no bundle", []string{vendorKey}, nil, "no signature"},
		{"another key", []string{vendorKey}, []runtimeapi.SignatureBundle{must(other.SignDigest(dgst, imagesigtest.CosignSignPredicate))}, "no valid signature by " + vendorKey},
		{"another image", []string{vendorKey}, []runtimeapi.SignatureBundle{must(vendor.SignDigest(otherDigest, imagesigtest.CosignSignPredicate))}, "no valid signature"},
		{"another manifest", []string{vendorKey}, []runtimeapi.SignatureBundle{must(vendor.SignManifest([]byte("{}")))}, "no valid signature"},
		{"an attestation", []string{vendorKey}, []runtimeapi.SignatureBundle{must(vendor.SignDigest(dgst, "https://slsa.dev/provenance/v1"))}, "an attestation"},
		{"not a bundle", []string{vendorKey}, []runtimeapi.SignatureBundle{{Source: "junk", Data: []byte("not json")}}, "not a Sigstore bundle"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			keys, _, err := loadKeys(Policy{RequireSignatures: true, Keys: tc.keys, AllowInsecure: true})
			if err != nil {
				t.Fatal(err)
			}
			by, err := check(tc.bundles, keys, dgst)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want == "" && by != vendorKey:
				t.Fatalf("verified by %q, want %s", by, vendorKey)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
}

func TestCovers(t *testing.T) {
	cases := []struct {
		images []string
		ref    string
		want   bool
	}{
		{nil, "busybox", true},
		{[]string{"registry.example.com"}, "registry.example.com/a/b:1", true},
		{[]string{"registry.example.com/vendor"}, "registry.example.com/vendor/app@sha256:" + strings.Repeat("a", 64), true},
		{[]string{"registry.example.com/vendor"}, "registry.example.com/vendor2/app:1", false},
		{[]string{"registry.example.com/vendor"}, "registry.example.com/other/app:1", false},
		{[]string{"docker.io/library/busybox"}, "busybox:1.36", true},
		{[]string{"127.0.0.1:5000/podhost"}, "127.0.0.1:5000/podhost/busybox:1", true},
	}
	for _, tc := range cases {
		p := Policy{RequireSignatures: true, Keys: []string{"k"}, Images: tc.images}
		if got := p.Covers(tc.ref); got != tc.want {
			t.Errorf("images %v covers %s = %v, want %v", tc.images, tc.ref, got, tc.want)
		}
	}
	if (Policy{Keys: []string{"k"}}).Covers("busybox") {
		t.Error("a policy with requireSignatures false covers an image")
	}
}

// Verify: a verdict is cached per digest (the source is not asked again),
// a failure is not, a changed key file is a new policy, and an image the
// policy does not cover is not looked at.
func TestVerifyCachesPerDigestAndPolicy(t *testing.T) {
	dir := t.TempDir()
	vendor, keyPath := newSigner(t, dir, "vendor.pub")
	dgst := digest.FromString("image")
	must := bundleOf(t)
	src := &fakeSource{bundles: []runtimeapi.SignatureBundle{must(vendor.SignDigest(dgst, imagesigtest.CosignSignPredicate))}}
	v, err := New(Policy{RequireSignatures: true, Keys: []string{keyPath}, Images: []string{"registry.example.com"}, AllowInsecure: true}, src, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := v.Verify(ctx, "elsewhere.example.com/app:1", dgst.String(), true); err != nil || src.calls != 0 {
		t.Fatalf("uncovered image: err %v, %d lookups", err, src.calls)
	}
	for range 2 {
		if err := v.Verify(ctx, "registry.example.com/app:1", dgst.String(), true); err != nil {
			t.Fatal(err)
		}
	}
	if src.calls != 1 {
		t.Fatalf("%d lookups for one digest, want 1 (cached)", src.calls)
	}
	// The key is replaced (rotation): the cached verdict no longer holds.
	other, _ := newSigner(t, dir, "unused.pub")
	if err := other.WritePublicKey(keyPath); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		err := v.Verify(ctx, "registry.example.com/app:1", dgst.String(), false)
		if !errors.Is(err, runtimeapi.ErrImageSignature) || !strings.Contains(err.Error(), keyPath) || !strings.Contains(err.Error(), "registry.example.com/app:1") {
			t.Fatalf("after the key changed: %v", err)
		}
		if src.calls != 2+i {
			t.Fatalf("failures cached: %d lookups", src.calls)
		}
	}
	if src.remote[1] {
		t.Error("remote lookup asked for although remote was false")
	}
}

func TestNewRefusesBadKeys(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.pub")
	if err := os.WriteFile(bad, []byte("not a key"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, writable := newSigner(t, dir, "writable.pub")
	if err := os.Chmod(writable, 0o666); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		p    Policy
		want string
	}{
		{Policy{RequireSignatures: true}, "imagePolicy.keys: requireSignatures needs"},
		{Policy{RequireSignatures: true, Keys: []string{filepath.Join(dir, "missing.pub")}}, "imagePolicy.keys: "},
		{Policy{RequireSignatures: true, Keys: []string{bad}, AllowInsecure: true}, "imagePolicy.keys: " + bad + ": no PEM public key"},
		{Policy{RequireSignatures: true, Keys: []string{writable}}, "imagePolicy.keys: " + writable + ": "},
	} {
		_, err := New(tc.p, &fakeSource{}, nil)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%+v: err %v, want %q", tc.p, err, tc.want)
		}
	}
	if _, err := New(Policy{RequireSignatures: true, Keys: []string{writable}, AllowInsecure: true}, &fakeSource{}, nil); err != nil {
		t.Errorf("allowInsecure: %v", err)
	}
}

// BenchmarkVerify: the cost per container start of an image verified
// before (cached: the key files read again, the fingerprint) and of a
// first verification (one bundle, one key).
func BenchmarkVerify(b *testing.B) {
	dir := b.TempDir()
	s, err := imagesigtest.NewSigner()
	if err != nil {
		b.Fatal(err)
	}
	keyPath := filepath.Join(dir, "vendor.pub")
	if err := s.WritePublicKey(keyPath); err != nil {
		b.Fatal(err)
	}
	dgst := digest.FromString("image")
	data, err := s.SignDigest(dgst, imagesigtest.CosignSignPredicate)
	if err != nil {
		b.Fatal(err)
	}
	src := &fakeSource{bundles: []runtimeapi.SignatureBundle{{Source: "bench", Data: data}}}
	p := Policy{RequireSignatures: true, Keys: []string{keyPath}, AllowInsecure: true}
	b.Run("cached", func(b *testing.B) {
		v, err := New(p, src, slog.New(slog.DiscardHandler))
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if err := v.Verify(context.Background(), "registry.example.com/app:1", dgst.String(), true); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("first", func(b *testing.B) {
		keys, _, err := loadKeys(p)
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if _, err := check(src.bundles, keys, dgst); err != nil {
				b.Fatal(err)
			}
		}
	})
}
