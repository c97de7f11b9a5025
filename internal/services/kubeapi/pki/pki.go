// Package pki makes and keeps the kube API's certificates under the state
// dir: a CA (its key never leaves the directory), the serving certificate
// of the TCP listener, and an admin client certificate that
// `podhost kubeconfig` embeds. Modes are the kubelet's PKI's: keys 0600,
// certificates 0644, the directory 0700.
package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// File names in the PKI directory.
const (
	CACert      = "ca.crt"
	CAKey       = "ca.key"
	ServingCert = "apiserver.crt"
	ServingKey  = "apiserver.key"
	AdminCert   = "admin.crt"
	AdminKey    = "admin.key"
	// AdminUser is the admin certificate's user (its CN) and group (O): the
	// group every cluster treats as all-powerful.
	AdminUser  = "podhost-admin"
	AdminGroup = "system:masters"
)

const (
	caValidity   = 10 * 365 * 24 * time.Hour
	leafValidity = 365 * 24 * time.Hour
	// renewBefore: a leaf certificate this close to its end is made anew
	// at start.
	renewBefore = 30 * 24 * time.Hour
)

// PKI is the loaded certificates of a directory.
type PKI struct {
	Dir     string
	CA      *x509.Certificate
	CAPEM   []byte
	Serving tls.Certificate
}

// Ensure loads the PKI in dir, making what is missing, expired, expiring
// or (for the serving certificate) missing one of hosts: the names and
// addresses clients reach the listener by.
func Ensure(dir string, hosts []string, now time.Time) (*PKI, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}
	ca, caKey, err := ensureCA(dir, now)
	if err != nil {
		return nil, err
	}
	serving := func(t *x509.Certificate) {
		t.Subject = pkix.Name{CommonName: "podhost"}
		t.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		for _, h := range hosts {
			if ip := net.ParseIP(h); ip != nil {
				t.IPAddresses = append(t.IPAddresses, ip)
			} else {
				t.DNSNames = append(t.DNSNames, h)
			}
		}
	}
	if err := ensureLeaf(dir, ServingCert, ServingKey, ca, caKey, now, serving, hostsCovered(hosts)); err != nil {
		return nil, err
	}
	admin := func(t *x509.Certificate) {
		t.Subject = pkix.Name{CommonName: AdminUser, Organization: []string{AdminGroup}}
		t.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	if err := ensureLeaf(dir, AdminCert, AdminKey, ca, caKey, now, admin, nil); err != nil {
		return nil, err
	}
	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, ServingCert), filepath.Join(dir, ServingKey))
	if err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}
	caPEM, err := os.ReadFile(filepath.Join(dir, CACert))
	if err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}
	return &PKI{Dir: dir, CA: ca, CAPEM: caPEM, Serving: cert}, nil
}

// hostsCovered: a serving certificate names every host.
func hostsCovered(hosts []string) func(*x509.Certificate) bool {
	return func(c *x509.Certificate) bool {
		for _, h := range hosts {
			if ip := net.ParseIP(h); ip != nil {
				if !slices.ContainsFunc(c.IPAddresses, ip.Equal) {
					return false
				}
			} else if !slices.Contains(c.DNSNames, h) {
				return false
			}
		}
		return true
	}
}

func ensureCA(dir string, now time.Time) (*x509.Certificate, crypto.Signer, error) {
	certPath, keyPath := filepath.Join(dir, CACert), filepath.Join(dir, CAKey)
	cert, key, err := load(certPath, keyPath)
	if err == nil && now.Before(cert.NotAfter) && cert.IsCA {
		return cert, key, nil
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, nil, err
	}
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("pki: %w", err)
	}
	key = ecKey
	t := template(now, caValidity)
	t.Subject = pkix.Name{CommonName: "podhost-ca"}
	t.IsCA, t.BasicConstraintsValid = true, true
	t.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, t, t, key.Public(), key)
	if err != nil {
		return nil, nil, fmt.Errorf("pki: CA: %w", err)
	}
	if err := write(certPath, keyPath, der, ecKey); err != nil {
		return nil, nil, err
	}
	cert, err = x509.ParseCertificate(der)
	return cert, key, err
}

// ensureLeaf keeps a leaf certificate signed by ca: made anew when
// missing, not signed by ca, near its end, or failing keep.
func ensureLeaf(dir, certName, keyName string, ca *x509.Certificate, caKey crypto.Signer, now time.Time,
	fill func(*x509.Certificate), keep func(*x509.Certificate) bool) error {
	certPath, keyPath := filepath.Join(dir, certName), filepath.Join(dir, keyName)
	cert, _, err := load(certPath, keyPath)
	if err == nil && cert.CheckSignatureFrom(ca) == nil && now.Add(renewBefore).Before(cert.NotAfter) && (keep == nil || keep(cert)) {
		return nil
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("pki: %w", err)
	}
	t := template(now, leafValidity)
	t.KeyUsage = x509.KeyUsageDigitalSignature
	fill(t)
	der, err := x509.CreateCertificate(rand.Reader, t, ca, key.Public(), caKey)
	if err != nil {
		return fmt.Errorf("pki: %s: %w", certName, err)
	}
	return write(certPath, keyPath, der, key)
}

func template(now time.Time, validity time.Duration) *x509.Certificate {
	serial, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	return &x509.Certificate{SerialNumber: serial, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(validity)}
}

// load reads a certificate and its key (os.ErrNotExist when either is
// missing).
func load(certPath, keyPath string) (*x509.Certificate, crypto.Signer, error) {
	pair, err := tls.LoadX509KeyPair(certPath, keyPath)
	if err != nil {
		if _, serr := os.Stat(certPath); errors.Is(serr, os.ErrNotExist) {
			return nil, nil, serr
		}
		if _, serr := os.Stat(keyPath); errors.Is(serr, os.ErrNotExist) {
			return nil, nil, serr
		}
		return nil, nil, fmt.Errorf("pki: %s: %w", certPath, err)
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, nil, fmt.Errorf("pki: %s: %w", certPath, err)
	}
	key, ok := pair.PrivateKey.(crypto.Signer)
	if !ok {
		return nil, nil, fmt.Errorf("pki: %s: not a signing key", keyPath)
	}
	return cert, key, nil
}

// write stores a certificate (0644) and its key (0600), each atomically.
func write(certPath, keyPath string, der []byte, key *ecdsa.PrivateKey) error {
	kb, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return fmt.Errorf("pki: %w", err)
	}
	if err := writeFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		return err
	}
	return writeFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
}

func writeFile(path string, data []byte, mode os.FileMode) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err == nil {
		_, err = f.Write(data)
		if serr := f.Sync(); err == nil {
			err = serr
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("pki: %w", err)
	}
	return nil
}

// Admin reads the admin client certificate and key (PEM) of dir.
func Admin(dir string) (certPEM, keyPEM, caPEM []byte, err error) {
	if certPEM, err = os.ReadFile(filepath.Join(dir, AdminCert)); err == nil {
		if keyPEM, err = os.ReadFile(filepath.Join(dir, AdminKey)); err == nil {
			caPEM, err = os.ReadFile(filepath.Join(dir, CACert))
		}
	}
	if err != nil {
		return nil, nil, nil, fmt.Errorf("pki: %w (has the daemon started with the kube API on?)", err)
	}
	return certPEM, keyPEM, caPEM, nil
}

// ClientCAs is a pool of the CA alone: the only issuer of client
// certificates the listener accepts.
func (p *PKI) ClientCAs() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(p.CA)
	return pool
}
