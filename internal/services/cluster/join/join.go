// Package join gives a box the credentials of a node of a Kubernetes
// cluster, as `kubeadm join` gives them to a kubelet: with a bootstrap
// token it finds and checks the cluster's CA (the cluster-info ConfigMap
// signed with the token, pinned by --ca-cert-hash, or a CA file) and does
// the kubelet's TLS bootstrap (a CertificateSigningRequest of signer
// kubernetes.io/kube-apiserver-client-kubelet through client-go's
// util/certificate/csr); with a kubeconfig it checks the API server
// answers and keeps a self-contained copy. Either way it writes the node's
// kubeconfig, root only, and nothing else: the caller writes podhost's
// config once Join returned (docs/cluster.md).
package join

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/certificate"
	"k8s.io/client-go/util/certificate/csr"
	"k8s.io/client-go/util/keyutil"
	bootstraputil "k8s.io/cluster-bootstrap/token/util"
)

// KubeconfigName is the node's kubeconfig Join writes in Options.Dir.
const KubeconfigName = "cluster.kubeconfig"

// ClientCertPrefix names the node's client certificate files in
// Options.PKIDir: <prefix>-<time>.pem and the <prefix>-current.pem link,
// the kubelet's layout (client-go's certificate.FileStore).
const ClientCertPrefix = "kubelet-client"

// Options are the command line's.
type Options struct {
	// Server (https://host:port), Token (a bootstrap token,
	// [a-z0-9]{6}.[a-z0-9]{16}), and CACertHashes (sha256:<hex>) and/or
	// CACertFile: the bootstrap. Or Kubeconfig alone: credentials made
	// elsewhere.
	Server, Token string
	CACertHashes  []string
	CACertFile    string
	Kubeconfig    string
	// NodeName is the node's name: the certificate's system:node:<name>.
	NodeName string
	// Dir gets the kubeconfig, PKIDir the client certificate.
	Dir, PKIDir string
	// Timeout bounds the wait for the CSR to be approved and signed.
	Timeout   time.Duration
	UserAgent string
}

// Validate checks the flags alone, before anything is read or asked.
func (o Options) Validate() error {
	if o.Kubeconfig != "" {
		if o.Server != "" || o.Token != "" || len(o.CACertHashes) > 0 || o.CACertFile != "" {
			return errors.New("--kubeconfig cannot be given with --server, --token, --ca-cert-hash or --ca-cert")
		}
		return nil
	}
	switch {
	case o.Server == "":
		return errors.New("--server (the API server, https://HOST:PORT) or --kubeconfig is required")
	case !strings.HasPrefix(o.Server, "https://"):
		return fmt.Errorf("--server %q: must be an https:// URL", o.Server)
	case o.Token == "":
		return errors.New("--token (a bootstrap token) is required with --server")
	case !bootstraputil.IsValidBootstrapToken(o.Token):
		return errors.New("--token: not a bootstrap token ([a-z0-9]{6}.[a-z0-9]{16})")
	case len(o.CACertHashes) == 0 && o.CACertFile == "":
		return errors.New("--ca-cert-hash (sha256:<hex>) or --ca-cert is required with --token: the API server's CA must be verified")
	}
	_, err := parsePins(o.CACertHashes)
	return err
}

// Join gets the node's credentials and writes its kubeconfig,
// <Dir>/cluster.kubeconfig (0600): its path. Nothing is written when it
// fails.
func Join(ctx context.Context, o Options) (string, error) {
	if err := o.Validate(); err != nil {
		return "", err
	}
	if o.Kubeconfig != "" {
		return copyKubeconfig(ctx, o)
	}
	return bootstrap(ctx, o)
}

// bootstrap is the kubelet's TLS bootstrap with a bootstrap token.
func bootstrap(ctx context.Context, o Options) (string, error) {
	ca, err := clusterCA(ctx, o)
	if err != nil {
		return "", err
	}
	rc := &rest.Config{Host: o.Server, BearerToken: o.Token, UserAgent: o.UserAgent, Timeout: 30 * time.Second,
		TLSClientConfig: rest.TLSClientConfig{CAData: ca}}
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return "", fmt.Errorf("--server %s: %w", o.Server, err)
	}
	certPEM, keyPEM, err := requestClientCert(ctx, client, o)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(o.PKIDir, 0o700); err != nil {
		return "", fmt.Errorf("join: %w", err)
	}
	store, err := certificate.NewFileStore(ClientCertPrefix, o.PKIDir, o.PKIDir, "", "")
	if err != nil {
		return "", fmt.Errorf("join: %s: %w", o.PKIDir, err)
	}
	if _, err := store.Update(certPEM, keyPEM); err != nil {
		return "", fmt.Errorf("join: write the client certificate in %s: %w", o.PKIDir, err)
	}
	current := filepath.Join(o.PKIDir, ClientCertPrefix+"-current.pem")
	cfg := kubeconfig(o.Server, ca, &clientcmdapi.AuthInfo{ClientCertificate: current, ClientKey: current})
	return writeKubeconfig(o.Dir, cfg)
}

// requestClientCert creates the node's CSR with the bootstrap credentials
// and waits for the certificate (the kubelet's requestNodeCertificate).
func requestClientCert(ctx context.Context, client kubernetes.Interface, o Options) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("join: generate a key: %w", err)
	}
	if keyPEM, err = keyutil.MarshalPrivateKeyToPEM(key); err != nil {
		return nil, nil, fmt.Errorf("join: %w", err)
	}
	subject := &pkix.Name{CommonName: "system:node:" + o.NodeName, Organization: []string{"system:nodes"}}
	csrPEM, err := certutil.MakeCSR(key, subject, nil, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("join: make the CSR: %w", err)
	}
	usages := []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}
	name, uid, err := csr.RequestCertificateWithContext(ctx, client, csrPEM, "", certificatesv1.KubeAPIServerClientKubeletSignerName, nil, usages, key)
	if err != nil {
		return nil, nil, fmt.Errorf("--server %s: create the CertificateSigningRequest: %w", o.Server, err)
	}
	wctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	certPEM, err = csr.WaitForCertificate(wctx, client, name, uid)
	if err != nil {
		return nil, nil, fmt.Errorf("--server %s: CertificateSigningRequest %s not approved and signed within %s: %w", o.Server, name, o.Timeout, err)
	}
	return certPEM, keyPEM, nil
}

// copyKubeconfig checks that the kubeconfig's API server answers with its
// credentials and writes a self-contained copy (its files inlined).
func copyKubeconfig(ctx context.Context, o Options) (string, error) {
	cfg, err := clientcmd.LoadFromFile(o.Kubeconfig)
	if err != nil {
		return "", fmt.Errorf("--kubeconfig %s: %w", o.Kubeconfig, err)
	}
	if err := clientcmdapi.MinifyConfig(cfg); err != nil {
		return "", fmt.Errorf("--kubeconfig %s: %w", o.Kubeconfig, err)
	}
	if err := clientcmdapi.FlattenConfig(cfg); err != nil {
		return "", fmt.Errorf("--kubeconfig %s: %w", o.Kubeconfig, err)
	}
	rc, err := clientcmd.NewDefaultClientConfig(*cfg, nil).ClientConfig()
	if err != nil {
		return "", fmt.Errorf("--kubeconfig %s: %w", o.Kubeconfig, err)
	}
	rc.UserAgent, rc.Timeout = o.UserAgent, 30*time.Second
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return "", fmt.Errorf("--kubeconfig %s: %w", o.Kubeconfig, err)
	}
	if _, err := client.Discovery().ServerVersionWithContext(ctx); err != nil {
		return "", fmt.Errorf("--kubeconfig %s: the API server %s: %w", o.Kubeconfig, rc.Host, err)
	}
	return writeKubeconfig(o.Dir, cfg)
}

// kubeconfig is a one-context kubeconfig for the node.
func kubeconfig(server string, ca []byte, user *clientcmdapi.AuthInfo) *clientcmdapi.Config {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["cluster"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca}
	cfg.AuthInfos["node"] = user
	cfg.Contexts["node"] = &clientcmdapi.Context{Cluster: "cluster", AuthInfo: "node"}
	cfg.CurrentContext = "node"
	return cfg
}

// writeKubeconfig writes cfg to dir/cluster.kubeconfig, 0600, atomically.
func writeKubeconfig(dir string, cfg *clientcmdapi.Config) (string, error) {
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return "", fmt.Errorf("join: %w", err)
	}
	path := filepath.Join(dir, KubeconfigName)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("join: %w", err)
	}
	return path, WriteFileAtomic(path, data, 0o600)
}

// WriteFileAtomic writes data to path through a temporary file in its
// dir, renamed over it: path is either what it was or data.
func WriteFileAtomic(path string, data []byte, mode os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(f.Name())
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
