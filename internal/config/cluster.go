package config

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Cluster makes podhost a node of a Kubernetes cluster (docs/cluster.md):
// podhost-cluster, beside the daemon, registers its Node, keeps its Lease
// renewed and publishes a mirror pod for every pod it runs. The zero value
// (no Kubeconfig) is standalone, the default.
type Cluster struct {
	// Kubeconfig is the kubeconfig file of the node's credentials for the
	// cluster's API server (its current context is used), read by
	// podhost-cluster, never by the daemon. Key cluster.kubeconfig.
	Kubeconfig string
	// NodeName is the name of the Node podhost stands for, as the
	// kubelet's --hostname-override ("" = the host name, lower-cased). It
	// is also every pod's spec.nodeName and the kubernetes.io/hostname
	// label, with or without a cluster. Key cluster.nodeName.
	NodeName string
	// NodeIP is the Node's InternalIP as podhost-cluster publishes it, the
	// kubelet's --node-ip ("" = the daemon's host IP): the address the API
	// server reaches the kubelet API on. Key cluster.nodeIP.
	NodeIP string
	// KubeletPort serves the kubelet API (logs, exec, attach,
	// port-forward, stats through the cluster's API server), published in
	// the Node's daemonEndpoints; 0 = not served. Key cluster.kubeletPort.
	KubeletPort int
	// KubeletAddress is the address it listens on ("" = the Node's
	// InternalIP). Key cluster.kubeletAddress.
	KubeletAddress string
	// TLSCertFile and TLSPrivateKeyFile serve it; both "" = a self-signed
	// certificate generated once into <stateDir>/cluster/pki, as the
	// kubelet's without --tls-cert-file. Keys cluster.tlsCertFile,
	// cluster.tlsPrivateKeyFile.
	TLSCertFile, TLSPrivateKeyFile string
	// ClientCAFile: client certificates it signs authenticate to the
	// kubelet API (the API server's --kubelet-client-certificate); "" =
	// only bearer tokens do (TokenReview). Key cluster.clientCAFile.
	ClientCAFile string
	// ClusterDNS are the cluster's DNS servers (the kubelet's
	// --cluster-dns): the nameservers of the ClusterFirst pods from the
	// cluster's API server; none: they get podhost's own, as local pods.
	// Key cluster.clusterDNS.
	ClusterDNS []string
	// ClusterDomain is the cluster's domain (the kubelet's
	// --cluster-domain) in those pods' search path; "" = the top-level
	// clusterDomain. Key cluster.clusterDomain.
	ClusterDomain string
}

// DefaultKubeletPort is the kubelet's port.
const DefaultKubeletPort = 10250

// clusterFile is Cluster's on-disk form.
type clusterFile struct {
	Kubeconfig        *string  `json:"kubeconfig"`
	NodeName          *string  `json:"nodeName"`
	NodeIP            *string  `json:"nodeIP"`
	KubeletPort       *int     `json:"kubeletPort"`
	KubeletAddress    *string  `json:"kubeletAddress"`
	TLSCertFile       *string  `json:"tlsCertFile"`
	TLSPrivateKeyFile *string  `json:"tlsPrivateKeyFile"`
	ClientCAFile      *string  `json:"clientCAFile"`
	ClusterDNS        []string `json:"clusterDNS"`
	ClusterDomain     *string  `json:"clusterDomain"`
}

// Joined: a cluster is configured.
func (c Cluster) Joined() bool { return c.Kubeconfig != "" }

// ClusterManifestDir is where podhost-cluster writes the pods the cluster
// binds to this node, with their ConfigMaps and Secrets, and the daemon
// reads them as a source of their own (root only, under the state dir).
func (c *Config) ClusterManifestDir() string {
	return filepath.Join(c.StateDir, "cluster", "manifests")
}

// ClusterPKIDir holds the node's client certificate for the cluster when
// `podhost join` got it by TLS bootstrap, and the kubelet API's
// self-signed serving certificate (root only, under the state dir).
func (c *Config) ClusterPKIDir() string {
	return filepath.Join(c.StateDir, "cluster", "pki")
}

func (f *clusterFile) applyTo(c *Cluster) {
	if f == nil {
		return
	}
	setString(&c.Kubeconfig, f.Kubeconfig)
	setString(&c.NodeName, f.NodeName)
	setString(&c.NodeIP, f.NodeIP)
	if f.KubeletPort != nil {
		c.KubeletPort = *f.KubeletPort
	}
	setString(&c.KubeletAddress, f.KubeletAddress)
	setString(&c.TLSCertFile, f.TLSCertFile)
	setString(&c.TLSPrivateKeyFile, f.TLSPrivateKeyFile)
	setString(&c.ClientCAFile, f.ClientCAFile)
	if f.ClusterDNS != nil {
		c.ClusterDNS = f.ClusterDNS
	}
	setString(&c.ClusterDomain, f.ClusterDomain)
}

func (c Cluster) validate() error {
	var errs []error
	if c.Kubeconfig != "" && !filepath.IsAbs(c.Kubeconfig) {
		errs = append(errs, fmt.Errorf("cluster.kubeconfig: must be an absolute path, got %q", c.Kubeconfig))
	}
	if c.NodeName != "" {
		if msgs := validation.IsDNS1123Subdomain(c.NodeName); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("cluster.nodeName: %q: %s", c.NodeName, strings.Join(msgs, "; ")))
		}
	}
	for _, kv := range [][2]string{{"cluster.nodeIP", c.NodeIP}, {"cluster.kubeletAddress", c.KubeletAddress}} {
		if kv[1] != "" && net.ParseIP(kv[1]) == nil {
			errs = append(errs, fmt.Errorf("%s: %q is not an IP address", kv[0], kv[1]))
		}
	}
	if c.KubeletPort < 0 || c.KubeletPort > 65535 {
		errs = append(errs, fmt.Errorf("cluster.kubeletPort: %d is not a port (0 turns the kubelet API off)", c.KubeletPort))
	}
	if (c.TLSCertFile == "") != (c.TLSPrivateKeyFile == "") {
		errs = append(errs, errors.New("cluster.tlsCertFile and cluster.tlsPrivateKeyFile: give both or neither"))
	}
	for _, kv := range [][2]string{{"cluster.tlsCertFile", c.TLSCertFile}, {"cluster.tlsPrivateKeyFile", c.TLSPrivateKeyFile}, {"cluster.clientCAFile", c.ClientCAFile}} {
		if kv[1] != "" && !filepath.IsAbs(kv[1]) {
			errs = append(errs, fmt.Errorf("%s: must be an absolute path, got %q", kv[0], kv[1]))
		}
	}
	for i, s := range c.ClusterDNS {
		if _, err := netip.ParseAddr(s); err != nil {
			errs = append(errs, fmt.Errorf("cluster.clusterDNS[%d]: %q is not an IP address", i, s))
		}
	}
	if d := strings.TrimSuffix(c.ClusterDomain, "."); d != "" {
		if msgs := validation.IsDNS1123Subdomain(d); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("cluster.clusterDomain: %q: %s", c.ClusterDomain, strings.Join(msgs, "; ")))
		}
	}
	return errors.Join(errs...)
}
