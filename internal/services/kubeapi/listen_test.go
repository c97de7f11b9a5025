package kubeapi

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/podhost/podhost/internal/services/kubeapi/pki"
)

// The TCP listener: TLS with the PKI's serving certificate; a request
// without a client certificate gets the API server's 401 and nothing
// else, one with the admin certificate is served, one with a certificate
// of another CA fails the handshake.
func TestServeTLSAuthentication(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	p, err := pki.Ensure(dir, []string{"localhost", "127.0.0.1"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "secret") })
	go func() { done <- ServeTLS(ctx, addr, p, h, slog.New(slog.DiscardHandler)) }()
	defer func() { cancel(); <-done }()

	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(p.CAPEM)
	get := func(certs []tls.Certificate) (int, string, error) {
		cl := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: roots, Certificates: certs, ServerName: "localhost"}}}
		var resp *http.Response
		var err error
		for range 100 { // until the listener is up
			if resp, err = cl.Get(fmt.Sprintf("https://%s/", addr)); err == nil {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), nil
	}
	if code, body, err := get(nil); err != nil || code != http.StatusUnauthorized || body == "secret" {
		t.Fatalf("no client certificate: %d %q %v", code, body, err)
	}
	cert, key, _, err := pki.Admin(dir)
	if err != nil {
		t.Fatal(err)
	}
	admin, err := tls.X509KeyPair(cert, key)
	if err != nil {
		t.Fatal(err)
	}
	if code, body, err := get([]tls.Certificate{admin}); err != nil || code != http.StatusOK || body != "secret" {
		t.Fatalf("admin certificate: %d %q %v", code, body, err)
	}
	other, err := pki.Ensure(filepath.Join(t.TempDir(), "other"), []string{"localhost"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	ocert, okey, _, _ := pki.Admin(other.Dir)
	stranger, _ := tls.X509KeyPair(ocert, okey)
	if code, _, err := get([]tls.Certificate{stranger}); err == nil {
		t.Fatalf("a certificate of another CA: %d, want a failed handshake", code)
	}
}

// pki.Ensure keeps what is valid and makes the serving certificate anew
// when the host gains an address; modes are the kubelet PKI's.
func TestPKIEnsure(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	p1, err := pki.Ensure(dir, []string{"localhost"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	p2, err := pki.Ensure(dir, []string{"localhost"}, time.Now())
	if err != nil || !p2.CA.Equal(p1.CA) || !sameLeaf(p1, p2) {
		t.Fatalf("a second Ensure changed the PKI: %v", err)
	}
	p3, err := pki.Ensure(dir, []string{"localhost", "10.1.2.3"}, time.Now())
	if err != nil || !p3.CA.Equal(p1.CA) || sameLeaf(p1, p3) {
		t.Fatalf("a new address: CA kept %v, serving certificate renewed %v (%v)", p3.CA.Equal(p1.CA), !sameLeaf(p1, p3), err)
	}
	for name, want := range map[string]string{"": "-rwx------", pki.CAKey: "-rw-------", pki.AdminKey: "-rw-------", pki.ServingKey: "-rw-------", pki.CACert: "-rw-r--r--"} {
		if got := modeOf(t, filepath.Join(dir, name)); got != want && !(name == "" && got == "drwx------") {
			t.Errorf("%s: mode %s, want %s", name, got, want)
		}
	}
}

func sameLeaf(a, b *pki.PKI) bool {
	return string(a.Serving.Certificate[0]) == string(b.Serving.Certificate[0])
}

func modeOf(t *testing.T, p string) string {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().String()
}
