//go:build integration

package integration

import (
	"context"
	"crypto/elliptic"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	digest "github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/host/imagesig/imagesigtest"
	"github.com/podhost/podhost/internal/model/wellknown"
	"github.com/podhost/podhost/internal/testenv"
)

// TestManifestArtifact (issue 34): manifestURL oci://… of the test
// registry, with imagePolicy requiring the vendor's signature on its
// repository. An artifact pushed by `podhost manifests push` and signed
// (a Sigstore bundle referrer, cosign's format) serves two pods; a new
// version pushed and signed by `manifests push --key` (a cosign key file)
// replaces them; a version signed by another key keeps the
// last good pods, with the error in get and check, also across a restart
// (the last good copy in the state db); signed at last, it applies.
func TestManifestArtifact(t *testing.T) {
	reg, _ := registryImage(t, testenv.RegistryOptions{})
	vendor, other := newSigner(t), newSigner(t)
	d := newPodhostd(t)
	key := filepath.Join(d.dir, "vendor.pub")
	if err := vendor.WritePublicKey(key); err != nil {
		t.Fatal(err)
	}
	// A cosign key file too (cosign generate-key-pair's format), for manifests push --key.
	cosignKey, cosignPub := filepath.Join(d.dir, "cosign.key"), filepath.Join(d.dir, "cosign.pub")
	priv, pub, err := cryptoutils.GeneratePEMEncodedECDSAKeyPair(elliptic.P256(), cryptoutils.StaticPasswordFunc([]byte("pw")))
	if err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(os.WriteFile(cosignKey, priv, 0o600), os.WriteFile(cosignPub, pub, 0o644)); err != nil {
		t.Fatal(err)
	}
	t.Setenv("COSIGN_PASSWORD", "pw")
	ref := "oci://" + reg.Ref("fleet/pods:stable")
	appendConfig(t, d, fmt.Sprintf("imagePolicy:\n  requireSignatures: true\n  keys: [%s, %s]\n  images: [%s/fleet]\n"+
		"manifestURL: %s\nmanifestURLPeriod: 300ms\n", key, cosignPub, reg.Addr, ref))
	version := func(v string, names ...string) string {
		dir := t.TempDir()
		for _, n := range names {
			extra := fmt.Sprintf("    env: [{name: VERSION, value: %q}]\n", v)
			if err := os.WriteFile(filepath.Join(dir, n+".yaml"), []byte(sleeper(n, 1, extra)), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	// Every pod is gone before the daemon's teardown checks: a signed
	// artifact with an empty List.
	t.Cleanup(func() {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "none.yaml"), []byte(emptyList), 0o644); err != nil {
			t.Fatal(err)
		}
		pushArtifact(t, d, reg, dir, ref, vendor)
	})

	pushArtifact(t, d, reg, version("1", "web", "api"), ref, vendor)
	d.start()
	v1 := map[string]*corev1.Pod{"web": d.waitRunning("web"), "api": d.waitRunning("api")}
	if src := v1["web"].Annotations[wellknown.AnnotationConfigSource]; src != ref {
		t.Errorf("config source %q, want %q", src, ref)
	}

	// Signed by podhost itself, with the cosign key.
	out := d.mustCLI("manifests", "push", version("2", "web", "api"), ref, "--key", cosignKey)
	if !strings.Contains(out, "signed with "+cosignKey+": referrer sha256:") {
		t.Fatalf("manifests push --key:\n%s", out)
	}
	v2 := map[string]*corev1.Pod{}
	for name, old := range v1 {
		v2[name] = d.waitPod(name, 90*time.Second, "replaced by version 2", func(p *corev1.Pod) bool { return p.UID != old.UID && allRunning(p) })
	}

	bad := pushArtifact(t, d, reg, version("3", "web", "api"), ref, other)
	want := "no valid signature by " + key
	_, stderr := d.waitCLI(60*time.Second, "the signature error", func(_, stderr string) bool {
		return strings.Contains(stderr, ref) && strings.Contains(stderr, want)
	}, "get", "pods")
	t.Logf("get pods stderr:\n%s", stderr)
	checkShows := func() {
		t.Helper()
		out, _, _ := d.cliSplit("check", "--containerd-address", env.Address)
		if !regexp.MustCompile(`warn  manifest-file ` + regexp.QuoteMeta(ref) + `: .*` + regexp.QuoteMeta(bad) + `.*` + regexp.QuoteMeta(want)).MatchString(out) {
			t.Errorf("check does not show the signature error of %s:\n%s", bad, out)
		}
	}
	checkShows()
	keptV2 := func(when string) {
		t.Helper()
		for name, p := range v2 {
			if got := d.pod(name); got == nil || got.UID != p.UID || !allRunning(got) {
				t.Fatalf("%s: %s is not the running version 2: %v", when, name, got)
			}
		}
	}
	keptV2("after the bad signature")

	// A restart with the tag still on the badly signed version: the last
	// good copy stands.
	d.kill(syscall.SIGTERM)
	d.out.Reset()
	d.start()
	d.waitCLI(60*time.Second, "the signature error after a restart", func(_, stderr string) bool {
		return strings.Contains(stderr, want)
	}, "get", "pods")
	keptV2("after a restart")
	checkShows()

	// Signed by the vendor after all (cosign sign after the push): it applies.
	signArtifact(t, reg, bad, vendor)
	for name, old := range v2 {
		d.waitPod(name, 90*time.Second, "replaced by version 3", func(p *corev1.Pod) bool { return p.UID != old.UID && allRunning(p) })
	}
	d.waitCLI(30*time.Second, "the error cleared", func(_, stderr string) bool { return !strings.Contains(stderr, "Warning") }, "get", "pods")
}

var pushedDigest = regexp.MustCompile(`(?m)^digest: (sha256:[0-9a-f]{64})$`)

// pushArtifact pushes dir to ref with `podhost manifests push` (through
// the daemon's config) and signs it with signer; it returns the digest.
func pushArtifact(t *testing.T, d *podhostd, reg *testenv.Registry, dir, ref string, signer *imagesigtest.Signer) string {
	t.Helper()
	out := d.mustCLI("manifests", "push", dir, ref, "--source", "https://git.example/fleet", "--revision", "main@sha1:1")
	m := pushedDigest.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("manifests push printed no digest:\n%s", out)
	}
	signArtifact(t, reg, m[1], signer)
	return m[1]
}

// signArtifact attaches signer's signature of the artifact dgst in
// fleet/pods, as cosign sign --new-bundle-format does.
func signArtifact(t *testing.T, reg *testenv.Registry, dgst string, signer *imagesigtest.Signer) {
	t.Helper()
	// Not t's context: the last signature is made in a cleanup, when t's is done.
	ctx, cancel := context.WithTimeout(env.Context(context.Background()), time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+reg.Addr+"/v2/fleet/pods/manifests/"+dgst, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", ocispec.MediaTypeImageManifest)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK || digest.FromBytes(raw).String() != dgst {
		t.Fatalf("manifest %s: %v, %s", dgst, err, resp.Status)
	}
	subject := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.Digest(dgst), Size: int64(len(raw))}
	if err := testenv.PushSignature(ctx, env.Client(), reg, "fleet/pods", subject, signer); err != nil {
		t.Fatal(err)
	}
}
