package kubeapi

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"golang.org/x/net/netutil"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	clientcmdv1 "k8s.io/client-go/tools/clientcmd/api/v1"
	"sigs.k8s.io/yaml"

	"github.com/podhost/podhost/internal/services/kubeapi/pki"
)

// DefaultAddress is the TCP listener's default: loopback, the port an API
// server answers on. Remote clients need kubeAPIAddress set to an address
// they reach (0.0.0.0:6443, a LAN address).
const DefaultAddress = "127.0.0.1:6443"

// TCP listener bounds: a client cannot hold the server with slow headers,
// idle keep-alive connections or huge headers. Watches, logs and streams
// are long-lived by design and not cut by them.
const (
	readHeaderTimeout = 10 * time.Second
	idleTimeout       = 90 * time.Second
	maxHeaderBytes    = 1 << 20
	// maxConns: connections served at once (each watch holds one); the
	// next ones wait in the listen backlog until one closes.
	maxConns = 512
)

// Authenticate lets through requests over TLS whose client certificate the
// listener verified against the PKI's CA, and requests without TLS (the
// unix socket: root only, mode 0660); anything else gets the API server's
// 401, and nothing else.
func Authenticate(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS != nil && len(r.TLS.VerifiedChains) == 0 {
			writeError(w, r, apierrors.NewUnauthorized("Unauthorized"))
			return
		}
		h.ServeHTTP(w, r)
	})
}

// ServeTLS serves h (authenticated) on addr over TLS with p's serving
// certificate until ctx ends. Client certificates are asked for and
// verified when given, so that a request without one gets a 401 (not a
// failed handshake).
func ServeTLS(ctx context.Context, addr string, p *pki.PKI, h http.Handler, log *slog.Logger) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("kube api: listen on %s: %w", addr, err)
	}
	ln = netutil.LimitListener(ln, maxConns)
	srv := &http.Server{Handler: Authenticate(h), ReadHeaderTimeout: readHeaderTimeout, IdleTimeout: idleTimeout,
		MaxHeaderBytes: maxHeaderBytes, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelDebug),
		TLSConfig: &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{p.Serving},
			ClientAuth: tls.VerifyClientCertIfGiven, ClientCAs: p.ClientCAs(), NextProtos: []string{"h2", "http/1.1"}}}
	log.Info("kube api listening", "address", ln.Addr().String())
	done := make(chan error, 1)
	go func() { done <- srv.ServeTLS(ln, "", "") }()
	select {
	case err := <-done:
		return fmt.Errorf("kube api: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Kubeconfig is an admin kubeconfig for server (https://HOST:PORT), with
// the CA and the admin client certificate embedded.
func Kubeconfig(server string, caPEM, certPEM, keyPEM []byte) ([]byte, error) {
	const name = "podhost"
	cfg := clientcmdv1.Config{
		Kind: "Config", APIVersion: "v1", CurrentContext: name,
		Clusters: []clientcmdv1.NamedCluster{{Name: name, Cluster: clientcmdv1.Cluster{Server: server, CertificateAuthorityData: caPEM}}},
		AuthInfos: []clientcmdv1.NamedAuthInfo{{Name: pki.AdminUser, AuthInfo: clientcmdv1.AuthInfo{
			ClientCertificateData: certPEM, ClientKeyData: keyPEM}}},
		Contexts: []clientcmdv1.NamedContext{{Name: name, Context: clientcmdv1.Context{Cluster: name, AuthInfo: pki.AdminUser,
			Namespace: "default"}}},
	}
	return yaml.Marshal(cfg)
}
