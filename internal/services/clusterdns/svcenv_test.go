package clusterdns

import (
	"net/netip"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The variables are the kubelet's (envvars_test.go in k8s.io/kubernetes
// pkg/kubelet/envvars): same names, values and per-port sets.
func TestServiceEnv(t *testing.T) {
	svc := func(ns, name string, ports ...corev1.ServicePort) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: corev1.ServiceSpec{Ports: ports}}
	}
	services := []*corev1.Service{
		svc("default", "web-front", corev1.ServicePort{Name: "http", Port: 80}, corev1.ServicePort{Name: "dns-udp", Port: 53, Protocol: corev1.ProtocolUDP}),
		svc("default", "db", corev1.ServicePort{Port: 5432, Protocol: corev1.ProtocolTCP}),
		svc("default", "headless", corev1.ServicePort{Port: 1}),
		svc("other", "api", corev1.ServicePort{Port: 8080}),
	}
	vips := map[string]netip.Addr{"default/web-front": netip.MustParseAddr("10.96.0.10"), "default/db": netip.MustParseAddr("10.96.0.11"),
		"other/api": netip.MustParseAddr("10.96.0.12")}
	var got []string
	for _, e := range ServiceEnv(services, vips, "default") {
		got = append(got, e.Name+"="+e.Value)
	}
	want := []string{
		"DB_SERVICE_HOST=10.96.0.11", "DB_SERVICE_PORT=5432", "DB_PORT=tcp://10.96.0.11:5432",
		"DB_PORT_5432_TCP=tcp://10.96.0.11:5432", "DB_PORT_5432_TCP_PROTO=tcp", "DB_PORT_5432_TCP_PORT=5432", "DB_PORT_5432_TCP_ADDR=10.96.0.11",
		"WEB_FRONT_SERVICE_HOST=10.96.0.10", "WEB_FRONT_SERVICE_PORT=80", "WEB_FRONT_SERVICE_PORT_HTTP=80", "WEB_FRONT_SERVICE_PORT_DNS_UDP=53",
		"WEB_FRONT_PORT=tcp://10.96.0.10:80",
		"WEB_FRONT_PORT_80_TCP=tcp://10.96.0.10:80", "WEB_FRONT_PORT_80_TCP_PROTO=tcp", "WEB_FRONT_PORT_80_TCP_PORT=80", "WEB_FRONT_PORT_80_TCP_ADDR=10.96.0.10",
		"WEB_FRONT_PORT_53_UDP=udp://10.96.0.10:53", "WEB_FRONT_PORT_53_UDP_PROTO=udp", "WEB_FRONT_PORT_53_UDP_PORT=53", "WEB_FRONT_PORT_53_UDP_ADDR=10.96.0.10",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if env := ServiceEnv(services, nil, "default"); len(env) != 0 {
		t.Errorf("without virtual IPs (serviceCIDR \"\"): %v", env)
	}
}
