package join

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"path/filepath"

	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/certificate"
)

// CurrentClientCert is the client certificate file (cert and key) Join
// names in the kubeconfig it writes for a bootstrap token.
func CurrentClientCert(pkiDir string) string {
	return filepath.Join(pkiDir, ClientCertPrefix+"-current.pem")
}

// RotateClientCert renews the node's client certificate in pkiDir as the
// kubelet's --rotate-certificates does, with client-go's certificate
// Manager: at 70–90 % of its lifetime (jittered) a new key and a CSR of
// the same subject and signer, made with the current certificate (a
// node's own CSR, which the cluster's approver approves for it), stored as
// a new kubelet-client-<time>.pem with the -current.pem link moved to it.
// client-go's transport reloads a kubeconfig's certificate files when they
// change (and closes connections made with the old one), so client, built
// from that kubeconfig, uses the new certificate without a restart. It
// returns at once; the manager stops when ctx ends.
func RotateClientCert(ctx context.Context, client kubernetes.Interface, nodeName, pkiDir string) error {
	store, err := certificate.NewFileStore(ClientCertPrefix, pkiDir, pkiDir, "", "")
	if err != nil {
		return fmt.Errorf("client certificate rotation: %s: %w", pkiDir, err)
	}
	m, err := certificate.NewManager(&certificate.Config{
		ClientsetFn:      func(*tls.Certificate) (kubernetes.Interface, error) { return client, nil },
		Template:         &x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:" + nodeName, Organization: []string{"system:nodes"}}},
		SignerName:       certificatesv1.KubeAPIServerClientKubeletSignerName,
		Usages:           []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
		CertificateStore: store,
		Name:             "kubelet-client",
		Ctx:              &ctx,
	})
	if err != nil {
		return fmt.Errorf("client certificate rotation: %w", err)
	}
	m.Start()
	go func() { <-ctx.Done(); m.Stop() }()
	return nil
}
