package join

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestValidate(t *testing.T) {
	hash := "sha256:" + strings.Repeat("ab", 32)
	for _, tc := range []struct {
		o    Options
		want string // "" = valid
	}{
		{Options{Server: "https://a:6443", Token: "abcdef.0123456789abcdef", CACertHashes: []string{hash}}, ""},
		{Options{Server: "https://a:6443", Token: "abcdef.0123456789abcdef", CACertFile: "/ca.crt"}, ""},
		{Options{Kubeconfig: "/k"}, ""},
		{Options{Kubeconfig: "/k", Token: "abcdef.0123456789abcdef"}, "cannot be given with"},
		{Options{}, "--server"},
		{Options{Server: "http://a", Token: "abcdef.0123456789abcdef", CACertHashes: []string{hash}}, "https://"},
		{Options{Server: "https://a"}, "--token"},
		{Options{Server: "https://a", Token: "ABCDEF.0123456789abcdef", CACertHashes: []string{hash}}, "not a bootstrap token"},
		{Options{Server: "https://a", Token: "abcdef.0123456789abcdef"}, "must be verified"},
		{Options{Server: "https://a", Token: "abcdef.0123456789abcdef", CACertHashes: []string{"md5:00"}}, "sha256:<64 hex digits>"},
		{Options{Server: "https://a", Token: "abcdef.0123456789abcdef", CACertHashes: []string{"sha256:abcd"}}, "sha256:<64 hex digits>"},
	} {
		err := tc.o.Validate()
		if (err == nil) != (tc.want == "") || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate(%+v) = %v, want %q", tc.o, err, tc.want)
		}
	}
}

// selfSigned is a CA certificate, PEM, and kubeadm's hash of its key.
func selfSigned(t *testing.T) ([]byte, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ca"}, NotBefore: time.Now(),
		NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := x509.ParseCertificate(der)
	sum := sha256.Sum256(c.RawSubjectPublicKeyInfo)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), "sha256:" + hex.EncodeToString(sum[:])
}

// TestCACertFileAndPins: --ca-cert is read and checked against
// --ca-cert-hash (upper case hex too, as kubeadm); a mismatch, a file that
// is not a certificate and one too large are refused.
func TestCACertFileAndPins(t *testing.T) {
	ca, hash := selfSigned(t)
	_, other := selfSigned(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(file, ca, 0o600); err != nil {
		t.Fatal(err)
	}
	base := Options{Server: "https://127.0.0.1:1", Token: "abcdef.0123456789abcdef", CACertFile: file}
	for _, tc := range []struct {
		hashes []string
		want   string
	}{
		{nil, ""},
		{[]string{hash}, ""},
		{[]string{"sha256:" + strings.ToUpper(strings.TrimPrefix(hash, "sha256:"))}, ""},
		{[]string{other, hash}, ""},
		{[]string{other}, "does not match --ca-cert-hash"},
	} {
		o := base
		o.CACertHashes = tc.hashes
		got, err := clusterCA(context.Background(), o)
		if (err == nil) != (tc.want == "") || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("hashes %v: %v, want %q", tc.hashes, err, tc.want)
		}
		if err == nil && string(got) != string(ca) {
			t.Errorf("hashes %v: CA %q", tc.hashes, got)
		}
	}
	for name, data := range map[string][]byte{"not PEM": []byte("hello"), "too large": make([]byte, maxCAFile+1)} {
		if err := os.WriteFile(file, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := clusterCA(context.Background(), base); err == nil || !strings.Contains(err.Error(), "--ca-cert") {
			t.Errorf("%s: %v, want a --ca-cert error", name, err)
		}
	}
}

// TestJoinKubeconfigUnreachable: a kubeconfig whose API server does not
// answer is refused and nothing is written.
func TestJoinKubeconfigUnreachable(t *testing.T) {
	dir := t.TempDir()
	kc := filepath.Join(dir, "in.kubeconfig")
	if err := os.WriteFile(kc, []byte("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: \"https://127.0.0.1:1\", insecure-skip-tls-verify: true}\nusers:\n- name: u\n  user: {token: x}\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	_, err := Join(context.Background(), Options{Kubeconfig: kc, Dir: out})
	if err == nil || !strings.Contains(err.Error(), "--kubeconfig "+kc) {
		t.Fatalf("Join: %v, want the kubeconfig's API server error", err)
	}
	if _, err := os.Stat(filepath.Join(out, KubeconfigName)); err == nil {
		t.Error("a kubeconfig was written")
	}
}
