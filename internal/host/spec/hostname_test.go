package spec

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The kubelet's GeneratePodHostNameAndDomain and GetNodenameForKernel.
func TestKernelHostname(t *testing.T) {
	yes, no := true, false
	long := strings.Repeat("a", 62) + "-bcd"
	for _, tc := range []struct {
		name, hostname, subdomain, clusterDomain string
		fqdn                                     *bool
		wantDomain, want, err                    string
	}{
		{name: "web", want: "web"},
		{name: "web", hostname: "front", want: "front"},
		{name: long, want: strings.Repeat("a", 62)},
		{name: "web", subdomain: "db", wantDomain: "db.default.svc.", want: "web"},
		{name: "web", subdomain: "db", clusterDomain: "cluster.local", fqdn: &no, wantDomain: "db.default.svc.cluster.local", want: "web"},
		{name: "web", subdomain: "db", fqdn: &yes, wantDomain: "db.default.svc.", want: "web.db.default.svc."},
		{name: "web", subdomain: "db", clusterDomain: "cluster.local", fqdn: &yes, wantDomain: "db.default.svc.cluster.local", want: "web.db.default.svc.cluster.local"},
		{name: "web", fqdn: &yes, want: "web"}, // no subdomain, no domain
		{name: strings.Repeat("w", 40), subdomain: "db", clusterDomain: "cluster.local", fqdn: &yes,
			wantDomain: "db.default.svc.cluster.local", err: "is too long (64 characters is the max, 69 characters requested)"},
	} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: tc.name, Namespace: "default"},
			Spec: corev1.PodSpec{Hostname: tc.hostname, Subdomain: tc.subdomain, SetHostnameAsFQDN: tc.fqdn}}
		if got := Domain(pod, tc.clusterDomain); got != tc.wantDomain {
			t.Errorf("%s/%s: Domain = %q, want %q", tc.name, tc.subdomain, got, tc.wantDomain)
		}
		got, err := KernelHostname(pod, tc.clusterDomain)
		if got != tc.want || (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s/%s: KernelHostname = %q, %v; want %q, %q", tc.name, tc.subdomain, got, err, tc.want, tc.err)
		}
	}
}

// HOSTNAME and the OCI hostname of a setHostnameAsFQDN pod are the FQDN,
// as containerd sets them from the sandbox config's hostname.
func TestBuildHostnameFQDN(t *testing.T) {
	p := testPod()
	yes := true
	p.Pod.Spec.Subdomain, p.Pod.Spec.SetHostnameAsFQDN = "db", &yes
	p.Host.ClusterDomain = "cluster.local"
	s, err := generate(t, p, testContainer(p))
	if err != nil {
		t.Fatal(err)
	}
	fqdn := "web.db." + p.Pod.Namespace + ".svc.cluster.local"
	eq(t, "hostname", s.Hostname, fqdn)
	eq(t, "env", s.Process.Env[1], "HOSTNAME="+fqdn)
}
