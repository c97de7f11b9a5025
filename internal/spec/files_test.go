package spec

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestHosts(t *testing.T) {
	aliases := []corev1.HostAlias{{IP: "10.1.1.1", Hostnames: []string{"db", "db.local"}}}
	got := string(Hosts("web", []string{"10.88.0.5", "fd00::5"}, aliases))
	want := hostsHeader +
		"127.0.0.1\tlocalhost\n" +
		"::1\tlocalhost ip6-localhost ip6-loopback\n" +
		"fe00::0\tip6-localnet\n" +
		"fe00::0\tip6-mcastprefix\n" +
		"fe00::1\tip6-allnodes\n" +
		"fe00::2\tip6-allrouters\n" +
		"10.88.0.5\tweb\n" +
		"fd00::5\tweb\n" +
		"\n# Entries added by HostAliases.\n" +
		"10.1.1.1\tdb\tdb.local\n"
	if got != want {
		t.Errorf("Hosts =\n%s\nwant\n%s", got, want)
	}
	if got := string(Hosts("web", nil, nil)); strings.Contains(got, "web") || strings.Contains(got, "HostAliases") {
		t.Errorf("no IPs, no aliases: %q", got)
	}
}

func TestHostnameFile(t *testing.T) {
	pod := &corev1.Pod{}
	pod.Name = "web"
	eq(t, "pod", string(HostnameFile(pod, "node1")), "web\n")
	pod.Spec.HostNetwork = true
	eq(t, "hostNetwork", string(HostnameFile(pod, "node1")), "node1\n")
}

func TestHostNetworkHosts(t *testing.T) {
	host := []byte("127.0.0.1 localhost\n192.168.1.2 node1\n")
	got := string(HostNetworkHosts(host, []corev1.HostAlias{{IP: "1.2.3.4", Hostnames: []string{"x"}}}))
	want := string(host) + "\n# Entries added by HostAliases.\n1.2.3.4\tx\n"
	if got != want {
		t.Errorf("HostNetworkHosts = %q, want %q", got, want)
	}
	if string(HostNetworkHosts(host, nil)) != string(host) {
		t.Error("without aliases the host file is copied")
	}
}

func TestResolv(t *testing.T) {
	hostResolv := []byte(`# generated
nameserver 127.0.0.53
nameserver 192.168.1.1 ; router
search old.example
search example.com. corp.example .
options edns0 ndots:2
`)
	ndots := "5"
	tests := []struct {
		name string
		spec corev1.PodSpec
		want string
	}{
		{
			name: "ClusterFirst falls back to the host, loopback dropped",
			spec: corev1.PodSpec{DNSPolicy: corev1.DNSClusterFirst},
			want: "search example.com corp.example\nnameserver 192.168.1.1\noptions edns0 ndots:2\n",
		},
		{
			name: "hostNetwork keeps loopback",
			spec: corev1.PodSpec{DNSPolicy: corev1.DNSDefault, HostNetwork: true},
			want: "search example.com corp.example\nnameserver 127.0.0.53\nnameserver 192.168.1.1\noptions edns0 ndots:2\n",
		},
		{
			name: "dnsConfig merged",
			spec: corev1.PodSpec{DNSPolicy: corev1.DNSDefault, DNSConfig: &corev1.PodDNSConfig{
				Nameservers: []string{"192.168.1.1", "1.1.1.1"},
				Searches:    []string{"svc.local", "corp.example"},
				Options:     []corev1.PodDNSConfigOption{{Name: "ndots", Value: &ndots}, {Name: "rotate"}},
			}},
			want: "search example.com corp.example svc.local\nnameserver 192.168.1.1\nnameserver 1.1.1.1\noptions edns0 ndots:5 rotate\n",
		},
		{
			name: "None ignores the host",
			spec: corev1.PodSpec{DNSPolicy: corev1.DNSNone, DNSConfig: &corev1.PodDNSConfig{
				Nameservers: []string{"9.9.9.9", "8.8.8.8", "1.1.1.1", "1.0.0.1"},
			}},
			want: "nameserver 9.9.9.9\nnameserver 8.8.8.8\nnameserver 1.1.1.1\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(Resolv(hostResolv, &corev1.Pod{Spec: tt.spec}))
			if got != tt.want {
				t.Errorf("Resolv =\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func TestFitSearches(t *testing.T) {
	var many []string
	for i := 0; i < 40; i++ {
		many = append(many, strings.Repeat("d", 60))
	}
	got := fitSearches(many)
	if n := len(strings.Join(got, " ")); n > maxSearchesLength || len(got) > maxSearches {
		t.Errorf("kept %d domains, %d chars", len(got), n)
	}
}
