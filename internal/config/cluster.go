package config

import (
	"errors"
	"fmt"
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

// clusterFile is Cluster's on-disk form.
type clusterFile struct {
	Kubeconfig    *string  `json:"kubeconfig"`
	NodeName      *string  `json:"nodeName"`
	ClusterDNS    []string `json:"clusterDNS"`
	ClusterDomain *string  `json:"clusterDomain"`
}

// Joined: a cluster is configured.
func (c Cluster) Joined() bool { return c.Kubeconfig != "" }

// ClusterManifestDir is where podhost-cluster writes the pods the cluster
// binds to this node, with their ConfigMaps and Secrets, and the daemon
// reads them as a source of their own (root only, under the state dir).
func (c *Config) ClusterManifestDir() string {
	return filepath.Join(c.StateDir, "cluster", "manifests")
}

func (f *clusterFile) applyTo(c *Cluster) {
	if f == nil {
		return
	}
	setString(&c.Kubeconfig, f.Kubeconfig)
	setString(&c.NodeName, f.NodeName)
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
