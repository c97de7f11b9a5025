package kubeletapi

import (
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

// ServingCertificate loads certFile and keyFile; when both are "", it
// loads the self-signed certificate of dir (kubelet.crt, kubelet.key),
// generated there once for host and ips as the kubelet does without
// tlsCertFile (client-go's cert helpers; dir 0700, the key 0600).
func ServingCertificate(certFile, keyFile, dir, host string, ips []net.IP) (tls.Certificate, error) {
	if certFile != "" || keyFile != "" {
		c, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return c, fmt.Errorf("cluster.tlsCertFile %s, cluster.tlsPrivateKeyFile %s: %w", certFile, keyFile, err)
		}
		return c, nil
	}
	certFile, keyFile = filepath.Join(dir, "kubelet.crt"), filepath.Join(dir, "kubelet.key")
	ok, err := cert.CanReadCertAndKey(certFile, keyFile)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("kubelet API certificate: %w", err)
	}
	if !ok {
		certPEM, keyPEM, err := cert.GenerateSelfSignedCertKey(host, ips, nil)
		if err != nil {
			return tls.Certificate{}, fmt.Errorf("kubelet API certificate: %w", err)
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return tls.Certificate{}, fmt.Errorf("kubelet API certificate: %w", err)
		}
		if err := keyutil.WriteKey(keyFile, keyPEM); err != nil {
			return tls.Certificate{}, fmt.Errorf("kubelet API certificate: %w", err)
		}
		if err := cert.WriteCert(certFile, certPEM); err != nil {
			return tls.Certificate{}, fmt.Errorf("kubelet API certificate: %w", err)
		}
	}
	c, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return c, fmt.Errorf("kubelet API certificate %s: %w", certFile, err)
	}
	return c, nil
}
