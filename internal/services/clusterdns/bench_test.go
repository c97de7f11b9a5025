package clusterdns

import (
	"fmt"
	"net/netip"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BenchmarkRebuild is what the daemon does at each pod status change: the
// table and the port rules of 20 Services over 100 pods.
func BenchmarkRebuild(b *testing.B) {
	var svcs []*corev1.Service
	var pods []*corev1.Pod
	for i := range 20 {
		svcs = append(svcs, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("s%d", i), Namespace: "default"},
			Spec: corev1.ServiceSpec{Selector: map[string]string{"app": fmt.Sprintf("a%d", i)},
				Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: "TCP"}}}})
	}
	for i := range 100 {
		pods = append(pods, pod(fmt.Sprintf("p%d", i), fmt.Sprintf("10.1.0.%d", i+2), true, map[string]string{"app": fmt.Sprintf("a%d", i%20)}))
	}
	cidr := netip.MustParsePrefix("10.96.0.0/16")
	b.ReportAllocs()
	for b.Loop() {
		vips := AssignVIPs(svcs, cidr)
		PortRules(svcs, pods, vips)
		BuildTable(svcs, pods, "cluster.local", vips)
	}
}
