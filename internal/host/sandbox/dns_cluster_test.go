package sandbox

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestPodDNSCluster: the kubelet's GetPodDNS with a cluster DNS server.
func TestPodDNSCluster(t *testing.T) {
	host := ResolvConf{Nameservers: []string{"192.0.2.53"}, Searches: []string{"corp.example", "svc.cluster.local"}, Options: []string{"edns0"}}
	for _, tc := range []struct {
		policy      corev1.DNSPolicy
		hostNetwork bool
		cfg         *corev1.PodDNSConfig
		want        string
	}{
		{corev1.DNSClusterFirst, false, nil,
			"search shop.svc.cluster.local svc.cluster.local cluster.local corp.example\nnameserver 10.89.0.1\noptions ndots:5\n"},
		{corev1.DNSClusterFirst, true, nil, // hostNetwork: Default
			"search corp.example svc.cluster.local\nnameserver 192.0.2.53\noptions edns0\n"},
		{corev1.DNSClusterFirstWithHostNet, true, nil,
			"search shop.svc.cluster.local svc.cluster.local cluster.local corp.example\nnameserver 10.89.0.1\noptions ndots:5\n"},
		{corev1.DNSDefault, false, nil, "search corp.example svc.cluster.local\nnameserver 192.0.2.53\noptions edns0\n"},
		{corev1.DNSClusterFirst, false, &corev1.PodDNSConfig{Options: []corev1.PodDNSConfigOption{{Name: "ndots", Value: new("2")}}},
			"search shop.svc.cluster.local svc.cluster.local cluster.local corp.example\nnameserver 10.89.0.1\noptions ndots:2\n"},
	} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop"},
			Spec: corev1.PodSpec{DNSPolicy: tc.policy, HostNetwork: tc.hostNetwork, DNSConfig: tc.cfg}}
		rc, _ := PodDNSCluster(host, pod, []string{"10.89.0.1"}, "cluster.local")
		if got := string(rc.Format()); got != tc.want {
			t.Errorf("%s hostNetwork=%v:\n got %q\nwant %q", tc.policy, tc.hostNetwork, got, tc.want)
		}
	}
	// No cluster domain: the search path is the host's.
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop"}, Spec: corev1.PodSpec{DNSPolicy: corev1.DNSClusterFirst}}
	if rc, _ := PodDNSCluster(host, pod, []string{"10.89.0.1"}, ""); strings.Join(rc.Searches, " ") != "corp.example svc.cluster.local" {
		t.Errorf("searches %v", rc.Searches)
	}
}
