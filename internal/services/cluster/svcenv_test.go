package cluster

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podhost/podhost/internal/model/wellknown"
)

// TestServiceEnvAsTheKubelet: a pod from the API server gets the
// kubernetes Service of default always, and with enableServiceLinks the
// Services of its namespace that have a cluster IP (not headless ones,
// not other namespaces'), from the cluster's Services.
func TestServiceEnvAsTheKubelet(t *testing.T) {
	m, client := newTestMirrors(t, &fakeNode{})
	svc := func(ns, name, ip string) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: corev1.ServiceSpec{ClusterIP: ip, Ports: []corev1.ServicePort{{Name: "https", Port: 443, Protocol: corev1.ProtocolTCP}}}}
	}
	for _, s := range []*corev1.Service{svc("default", "kubernetes", "10.96.0.1"), svc("apps", "web-api", "10.96.0.20"),
		svc("apps", "headless", corev1.ClusterIPNone), svc("other", "db", "10.96.0.30")} {
		if err := client.Tracker().Add(s); err != nil {
			t.Fatal(err)
		}
	}
	p := apiPod("web")
	p.Namespace = "apps"
	pass := svcPass{}
	cm, err := m.serviceEnvConfigMap(context.Background(), pass, p)
	if err != nil {
		t.Fatal(err)
	}
	if cm.Name != wellknown.ServiceEnvConfigMap("api-uid") || cm.Namespace != "apps" {
		t.Errorf("ConfigMap %s/%s", cm.Namespace, cm.Name)
	}
	want := map[string]string{
		"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443", "KUBERNETES_SERVICE_PORT_HTTPS": "443",
		"KUBERNETES_PORT": "tcp://10.96.0.1:443", "KUBERNETES_PORT_443_TCP": "tcp://10.96.0.1:443",
		"KUBERNETES_PORT_443_TCP_PROTO": "tcp", "KUBERNETES_PORT_443_TCP_PORT": "443", "KUBERNETES_PORT_443_TCP_ADDR": "10.96.0.1",
		"WEB_API_SERVICE_HOST": "10.96.0.20", "WEB_API_SERVICE_PORT": "443", "WEB_API_SERVICE_PORT_HTTPS": "443",
		"WEB_API_PORT": "tcp://10.96.0.20:443", "WEB_API_PORT_443_TCP": "tcp://10.96.0.20:443",
		"WEB_API_PORT_443_TCP_PROTO": "tcp", "WEB_API_PORT_443_TCP_PORT": "443", "WEB_API_PORT_443_TCP_ADDR": "10.96.0.20",
	}
	if len(cm.Data) != len(want) {
		t.Errorf("variables %v, want %v", cm.Data, want)
	}
	for k, v := range want {
		if cm.Data[k] != v {
			t.Errorf("%s=%q, want %q", k, cm.Data[k], v)
		}
	}
	no := false
	p.Spec.EnableServiceLinks = &no
	if cm, _ = m.serviceEnvConfigMap(context.Background(), pass, p); len(cm.Data) != 8 || cm.Data["KUBERNETES_SERVICE_HOST"] != "10.96.0.1" {
		t.Errorf("enableServiceLinks false: %v, want the kubernetes Service's only", cm.Data)
	}
	if len(pass) != 2 {
		t.Errorf("read %d lists in the pass, want 2 (the master Service, namespace apps)", len(pass))
	}
}

// TestReservedRef: a pod naming another pod's token Secret or service
// variables ConfigMap is refused.
func TestReservedRef(t *testing.T) {
	p := apiPod("thief")
	if r := reservedRef(p); r != "" {
		t.Errorf("an ordinary pod: %q", r)
	}
	p.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: wellknown.ServiceEnvConfigMap("victim")}}}}
	if r := reservedRef(p); r == "" || !strings.Contains(r, "service variables") {
		t.Errorf("a pod naming a service variables ConfigMap: %q", r)
	}
}
