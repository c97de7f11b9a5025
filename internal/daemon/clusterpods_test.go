package daemon

import (
	"path/filepath"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/config"
	"github.com/podhost/podhost/internal/desired/configdata"
	"github.com/podhost/podhost/internal/model/wellknown"
)

// TestClusterPodsDNSAndServiceEnv: a pod from the cluster source gets the
// cluster's DNS (once configured) and the service variables
// podhost-cluster wrote for it, enableServiceLinks applied already; a
// pod of the manifest dir neither.
func TestClusterPodsDNSAndServiceEnv(t *testing.T) {
	cfg := config.Default()
	cfg.StateDir = t.TempDir()
	d := &daemon{cfg: cfg}
	d.data = configdata.NewStore(d.sourceScope)
	pod := func(dir, uid string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "apps", UID: types.UID("u-x" + uid),
			Annotations: map[string]string{wellknown.AnnotationConfigSource: filepath.Join(dir, "apps_web.yaml")}}}
	}
	fromCluster, local := pod(cfg.ClusterManifestDir(), "1"), pod("/etc/podhost/manifests", "2")
	if _, _, ok := d.podDNS(fromCluster); ok {
		t.Error("the cluster's DNS without cluster.clusterDNS")
	}
	cfg.Cluster.ClusterDNS = []string{"10.96.0.10"}
	if s, dom, ok := d.podDNS(fromCluster); !ok || !slices.Equal(s, []string{"10.96.0.10"}) || dom != "cluster.local" {
		t.Errorf("the cluster's pod: %v %q %v, want 10.96.0.10 in the top-level clusterDomain", s, dom, ok)
	}
	if _, _, ok := d.podDNS(local); ok {
		t.Error("a local pod got the cluster's DNS")
	}
	if env, final := d.podServiceEnv(fromCluster); env != nil || !final {
		t.Errorf("before podhost-cluster wrote them: %v %v, want none (not podhost's Services')", env, final)
	}
	svcEnv := func(dir string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: wellknown.ServiceEnvConfigMap("u-x1"),
			Annotations: map[string]string{wellknown.AnnotationConfigSource: filepath.Join(dir, "apps_web.yaml")}},
			Data: map[string]string{"KUBERNETES_SERVICE_PORT": "443", "KUBERNETES_SERVICE_HOST": "10.96.0.1"}}
	}
	d.data.Replace([]*corev1.ConfigMap{svcEnv("/etc/podhost/manifests")}, nil)
	if env, final := d.podServiceEnv(fromCluster); env != nil || !final {
		t.Errorf("from a manifest dir's ConfigMap: %v %v, want none (only the cluster source's own)", env, final)
	}
	d.data.Replace([]*corev1.ConfigMap{svcEnv(cfg.ClusterManifestDir())}, nil)
	env, final := d.podServiceEnv(fromCluster)
	want := []corev1.EnvVar{{Name: "KUBERNETES_SERVICE_HOST", Value: "10.96.0.1"}, {Name: "KUBERNETES_SERVICE_PORT", Value: "443"}}
	if !final || !slices.Equal(env, want) {
		t.Errorf("the cluster's pod: %v %v, want %v", env, final, want)
	}
	if env, final := d.podServiceEnv(local); env != nil || final {
		t.Errorf("a local pod: %v %v, want podhost's (none here)", env, final)
	}
}
