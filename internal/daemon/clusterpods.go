package daemon

import (
	"path/filepath"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/model/wellknown"
)

// What the pods from the cluster's API server (the cluster source,
// runClusterSource) get from the cluster rather than from podhost: its
// DNS servers and domain (cluster.clusterDNS, cluster.clusterDomain) and
// its Kubernetes service variables (the ConfigMap podhost-cluster writes
// in the pod's file, wellknown.ServiceEnvConfigMap).

// fromCluster: pod came from the cluster source's dir.
func (d *daemon) fromCluster(pod *corev1.Pod) bool {
	src := pod.Annotations[wellknown.AnnotationConfigSource]
	return src != "" && filepath.Dir(src) == d.cfg.ClusterManifestDir()
}

// podDNS is sandbox.WithPodDNS's: the cluster's DNS for its pods, when
// configured.
func (d *daemon) podDNS(pod *corev1.Pod) (servers []string, domain string, ok bool) {
	c := d.cfg.Cluster
	if len(c.ClusterDNS) == 0 || !d.fromCluster(pod) {
		return nil, "", false
	}
	domain = c.ClusterDomain
	if domain == "" {
		domain = d.cfg.ClusterDomain
	}
	return c.ClusterDNS, domain, true
}

// podServiceEnv is syncer.Config.ServiceEnv: a pod from the cluster gets
// the cluster's service variables (none until podhost-cluster wrote them),
// the others podhost's own Services' of their namespace.
func (d *daemon) podServiceEnv(pod *corev1.Pod) ([]corev1.EnvVar, bool) {
	if !d.fromCluster(pod) {
		return d.dns.serviceEnv(pod.Namespace), false
	}
	cm, ok := d.data.For(pod).ConfigMap(pod.Namespace, wellknown.ServiceEnvConfigMap(string(pod.UID)))
	if !ok {
		return nil, true
	}
	names := make([]string, 0, len(cm.Data))
	for k := range cm.Data {
		names = append(names, k)
	}
	slices.Sort(names)
	env := make([]corev1.EnvVar, 0, len(names))
	for _, k := range names {
		env = append(env, corev1.EnvVar{Name: k, Value: cm.Data[k]})
	}
	return env, true
}
