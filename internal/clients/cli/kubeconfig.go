package cli

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"

	"github.com/podhost/podhost/internal/clients/cmdutil"
	"github.com/podhost/podhost/internal/services/kubeapi"
	"github.com/podhost/podhost/internal/services/kubeapi/pki"
)

// KubeconfigOptions are `podhost kubeconfig`'s.
type KubeconfigOptions struct {
	StateDir string // where the daemon keeps its PKI (<stateDir>/pki)
	Address  string // kubeAPIAddress
	Server   string // --server: the URL to name instead of https://<Address>
}

// Kubeconfig prints an admin kubeconfig for the node's kube API.
func Kubeconfig(o KubeconfigOptions, s cmdutil.IOStreams) error {
	server := o.Server
	if server == "" {
		if o.Address == "" {
			return errors.New("kubeAPIAddress is empty: the Kubernetes API is served on the API socket only; set it (or pass --server)")
		}
		host, port, err := net.SplitHostPort(o.Address)
		if err != nil {
			return fmt.Errorf("kubeAPIAddress %q: %w", o.Address, err)
		}
		if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
			host = "127.0.0.1"
		}
		server = "https://" + net.JoinHostPort(host, port)
	}
	cert, key, ca, err := pki.Admin(filepath.Join(o.StateDir, "pki"))
	if err != nil {
		return err
	}
	out, err := kubeapi.Kubeconfig(server, ca, cert, key)
	if err != nil {
		return err
	}
	_, err = s.Out.Write(out)
	return err
}
