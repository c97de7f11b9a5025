package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/podhost/podhost/internal/clients/localnode"
	"github.com/podhost/podhost/internal/config"
	"github.com/podhost/podhost/internal/services/kubeletapi"
)

// kubeletAPI is the kubelet API before it is served: its files read.
type kubeletAPI struct {
	c      config.Cluster
	pkiDir string
	auth   *kubeletapi.Auth
	cert   *tls.Certificate // nil: the self-signed one of pkiDir
}

// prepareKubeletAPI reads the kubelet API's files (cluster.clientCAFile,
// cluster.tlsCertFile/tlsPrivateKeyFile): an error names the bad one.
// Nothing is contacted yet. nil, nil when cluster.kubeletPort is 0.
func prepareKubeletAPI(cfg *config.Config, central kubernetes.Interface) (*kubeletAPI, error) {
	c := cfg.Cluster
	if c.KubeletPort == 0 {
		return nil, nil
	}
	k := &kubeletAPI{c: c, pkiDir: cfg.ClusterPKIDir()}
	var err error
	if k.auth, err = kubeletapi.NewAuth(kubeletapi.AuthConfig{ClientCAFile: c.ClientCAFile,
		TokenReviews: central.AuthenticationV1(), Reviews: central.AuthorizationV1()}); err != nil {
		return nil, fmt.Errorf("config %s: %w", sourceName(cfg), err)
	}
	if c.TLSCertFile != "" {
		crt, err := kubeletapi.ServingCertificate(c.TLSCertFile, c.TLSPrivateKeyFile, "", "", nil)
		if err != nil {
			return nil, fmt.Errorf("config %s: %w", sourceName(cfg), err)
		}
		k.cert = &crt
	}
	return k, nil
}

// start serves the kubelet API until ctx ends and returns its port, or 0
// when it is off or cannot be served (logged: the node joins without it,
// as the daemon runs on without a kube API port it cannot bind).
func (k *kubeletAPI) start(ctx context.Context, node *localnode.Node, socket string,
	clusterPod func(namespace, name string) (*corev1.Pod, bool), log *slog.Logger) int32 {
	if k == nil {
		return 0
	}
	ip := k.c.NodeIP
	if ip == "" {
		if n, err := node.Node(ctx); err == nil {
			ip = internalIP(n)
		}
	}
	addr := k.c.KubeletAddress
	if addr == "" {
		addr = ip
	}
	if addr == "" {
		addr = "0.0.0.0"
	}
	fail := func(err error) int32 {
		log.Error("the kubelet API is not served", "err", err)
		return 0
	}
	if k.cert == nil {
		host, _ := os.Hostname()
		var ips []net.IP
		if parsed := net.ParseIP(ip); parsed != nil {
			ips = append(ips, parsed)
		}
		crt, err := kubeletapi.ServingCertificate("", "", k.pkiDir, host, ips)
		if err != nil {
			return fail(err)
		}
		k.cert = &crt
	}
	srv := kubeletapi.New(kubeletapi.Options{NodeName: node.Name(), Address: net.JoinHostPort(addr, strconv.Itoa(k.c.KubeletPort)),
		Certificate: *k.cert, Auth: k.auth, Backend: node, Daemon: localnode.Transport(socket), Stats: node, ClusterPod: clusterPod, Logger: log})
	l, err := srv.Listen()
	if err != nil {
		return fail(err)
	}
	go k.auth.Run(ctx)
	go func() {
		if err := srv.Serve(ctx, l); err != nil {
			log.Error("the kubelet API stopped", "err", err)
		}
	}()
	return int32(k.c.KubeletPort)
}

func internalIP(n *corev1.Node) string {
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			return a.Address
		}
	}
	return ""
}
