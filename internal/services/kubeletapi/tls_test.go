package kubeletapi

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"testing"
)

// Without certificate files, a self-signed one is generated once into
// dir (0700, the key 0600) and kept across restarts.
func TestServingCertificateSelfSigned(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	first, err := ServingCertificate("", "", dir, "box-1", []net.IP{net.ParseIP("127.0.0.1")})
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(dir); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("%s: %v %v", dir, err, st.Mode())
	}
	if st, err := os.Stat(filepath.Join(dir, "kubelet.key")); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("kubelet.key: %v %v", err, st.Mode())
	}
	again, err := ServingCertificate("", "", dir, "box-1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first.Certificate[0], again.Certificate[0]) {
		t.Error("the certificate was generated again")
	}
	if _, err := ServingCertificate(filepath.Join(dir, "absent.crt"), filepath.Join(dir, "kubelet.key"), "", "", nil); err == nil {
		t.Error("an absent tlsCertFile loaded")
	}
}
