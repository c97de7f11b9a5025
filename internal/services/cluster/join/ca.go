package join

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	certutil "k8s.io/client-go/util/cert"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	"k8s.io/cluster-bootstrap/token/jws"
)

// maxCAFile bounds what --ca-cert reads, maxClusterInfo the answer of a
// server nothing vouches for yet.
const (
	maxCAFile      = 1 << 20
	maxClusterInfo = 1 << 20
)

// clusterCA is the API server's CA (PEM): --ca-cert's, checked against
// --ca-cert-hash if given; else the cluster-info ConfigMap's, checked as
// kubeadm's token discovery checks it: signed with the token (JWS), and
// pinned by --ca-cert-hash.
func clusterCA(ctx context.Context, o Options) ([]byte, error) {
	pins, err := parsePins(o.CACertHashes)
	if err != nil {
		return nil, err
	}
	if o.CACertFile != "" {
		ca, err := readCAFile(o.CACertFile)
		if err != nil {
			return nil, err
		}
		if len(pins) > 0 {
			if err := checkPins(ca, pins); err != nil {
				return nil, fmt.Errorf("--ca-cert %s: %w", o.CACertFile, err)
			}
		}
		return ca, nil
	}
	ca, err := discoverCA(ctx, o)
	if err != nil {
		return nil, err
	}
	if err := checkPins(ca, pins); err != nil {
		return nil, fmt.Errorf("--server %s: the cluster-info CA: %w", o.Server, err)
	}
	return ca, nil
}

func readCAFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--ca-cert: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxCAFile+1))
	if err != nil {
		return nil, fmt.Errorf("--ca-cert %s: %w", path, err)
	}
	if len(data) > maxCAFile {
		return nil, fmt.Errorf("--ca-cert %s: larger than %d bytes", path, maxCAFile)
	}
	if _, err := certutil.ParseCertsPEM(data); err != nil {
		return nil, fmt.Errorf("--ca-cert %s: %w", path, err)
	}
	return data, nil
}

// discoverCA reads kube-public/cluster-info without credentials nor TLS
// verification (nothing is trusted yet) and keeps its CA only if the
// ConfigMap's kubeconfig carries a valid signature made with the token
// (the cluster's bootstrap signer's jws-kubeconfig-<token id>).
func discoverCA(ctx context.Context, o Options) ([]byte, error) {
	rc := &rest.Config{Host: o.Server, UserAgent: o.UserAgent, Timeout: 30 * time.Second,
		TLSClientConfig: rest.TLSClientConfig{Insecure: true},
		WrapTransport:   func(rt http.RoundTripper) http.RoundTripper { return limitedTransport{rt, maxClusterInfo} }}
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("--server %s: %w", o.Server, err)
	}
	cm, err := client.CoreV1().ConfigMaps(metav1.NamespacePublic).Get(ctx, bootstrapapi.ConfigMapClusterInfo, metav1.GetOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
			return nil, fmt.Errorf("--server %s: no readable %s/%s ConfigMap to find the CA by --ca-cert-hash (give --ca-cert): %w", o.Server, metav1.NamespacePublic, bootstrapapi.ConfigMapClusterInfo, err)
		}
		return nil, fmt.Errorf("--server %s: %w", o.Server, err)
	}
	id, secret, _ := strings.Cut(o.Token, ".")
	content := cm.Data[bootstrapapi.KubeConfigKey]
	sig, ok := cm.Data[bootstrapapi.JWSSignatureKeyPrefix+id]
	if !ok {
		return nil, fmt.Errorf("--server %s: cluster-info is not signed for token id %s (unknown or expired token)", o.Server, id)
	}
	if !jws.DetachedTokenIsValid(sig, content, id, secret) {
		return nil, fmt.Errorf("--server %s: cluster-info's signature does not match --token", o.Server)
	}
	cfg, err := clientcmd.Load([]byte(content))
	if err != nil {
		return nil, fmt.Errorf("--server %s: cluster-info's kubeconfig: %w", o.Server, err)
	}
	for _, c := range cfg.Clusters { // kubeadm takes the one cluster there is
		if len(c.CertificateAuthorityData) > 0 {
			return c.CertificateAuthorityData, nil
		}
	}
	return nil, fmt.Errorf("--server %s: cluster-info's kubeconfig has no CA", o.Server)
}

// A pin is kubeadm's --discovery-token-ca-cert-hash: sha256 of a
// certificate's DER Subject Public Key Info, hex. kubeadm's pubkeypin
// package lives in k8s.io/kubernetes, which is not importable as a
// library; these few lines do what it does.
const pinPrefix = "sha256:"

func parsePins(hashes []string) (map[string]bool, error) {
	pins := map[string]bool{}
	for _, h := range hashes {
		hexPart, ok := strings.CutPrefix(strings.ToLower(h), pinPrefix)
		if b, err := hex.DecodeString(hexPart); !ok || err != nil || len(b) != sha256.Size {
			return nil, fmt.Errorf("--ca-cert-hash %q: must be sha256:<64 hex digits> (kubeadm's format)", h)
		}
		pins[hexPart] = true
	}
	return pins, nil
}

// checkPins: a certificate of caPEM matches one of pins.
func checkPins(caPEM []byte, pins map[string]bool) error {
	certs, err := certutil.ParseCertsPEM(caPEM)
	if err != nil {
		return err
	}
	var got []string
	for _, c := range certs {
		h := pinOf(c)
		if pins[h] {
			return nil
		}
		got = append(got, pinPrefix+h)
	}
	return errors.New("public key hash " + strings.Join(got, ", ") + " does not match --ca-cert-hash")
}

func pinOf(c *x509.Certificate) string {
	sum := sha256.Sum256(c.RawSubjectPublicKeyInfo)
	return hex.EncodeToString(sum[:])
}

// limitedTransport fails a response whose body is longer than max bytes.
type limitedTransport struct {
	rt  http.RoundTripper
	max int64
}

func (t limitedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.rt.RoundTrip(req)
	if err == nil {
		resp.Body = &limitedBody{ReadCloser: resp.Body, left: t.max}
	}
	return resp, err
}

type limitedBody struct {
	io.ReadCloser
	left int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, fmt.Errorf("the answer is larger than %d bytes", maxClusterInfo)
	}
	if int64(len(p)) > b.left {
		p = p[:b.left+1] // one byte more tells a body of exactly left bytes from a longer one
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return n, fmt.Errorf("the answer is larger than %d bytes", maxClusterInfo)
	}
	return n, err
}
