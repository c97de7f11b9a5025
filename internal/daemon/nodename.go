package daemon

import (
	"os"

	"github.com/podhost/podhost/internal/config"
	"github.com/podhost/podhost/internal/kubelet/admission"
)

// nodeNameOf is the name of the Node podhost stands for: cluster.nodeName,
// else the host name as the kubelet makes it one. podhost-cluster reads it
// from the Node the daemon serves; the daemon itself never talks to a
// cluster (docs/cluster.md).
func nodeNameOf(cfg *config.Config) string {
	if cfg.Cluster.NodeName != "" {
		return cfg.Cluster.NodeName
	}
	host, _ := os.Hostname()
	return admission.NodeName(host)
}
