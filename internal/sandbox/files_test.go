package sandbox

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPodHostname(t *testing.T) {
	long := strings.Repeat("a", 62) + "-bcd"
	for _, tc := range []struct {
		name, hostname, want string
	}{
		{"web", "", "web"},
		{"web", "front", "front"},
		{long, "", strings.Repeat("a", 62)},
	} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: tc.name}, Spec: corev1.PodSpec{Hostname: tc.hostname}}
		if got := PodHostname(pod); got != tc.want {
			t.Errorf("PodHostname(%q, %q) = %q, want %q", tc.name, tc.hostname, got, tc.want)
		}
	}
}

func TestManagedHosts(t *testing.T) {
	got := string(managedHosts("web", []string{"10.89.0.5", "fd00::5"})) +
		string(hostAliases([]corev1.HostAlias{{IP: "10.1.1.1", Hostnames: []string{"db", "db.local"}}}))
	want := `# podhost-managed hosts file.
127.0.0.1	localhost
::1	localhost ip6-localhost ip6-loopback
fe00::0	ip6-localnet
fe00::0	ip6-mcastprefix
fe00::1	ip6-allnodes
fe00::2	ip6-allrouters
10.89.0.5	web
fd00::5	web

# Entries added by HostAliases.
10.1.1.1	db	db.local
`
	if got != want {
		t.Errorf("hosts:\n%s\nwant:\n%s", got, want)
	}
	if hostAliases(nil) != nil {
		t.Error("no aliases must add nothing")
	}
}

func TestParseResolvConf(t *testing.T) {
	rc := ParseResolvConf([]byte(`# comment
; other comment
domain example.org
nameserver 10.0.0.1
nameserver   10.0.0.2
options ndots:2
options rotate
nameserver
`))
	if got := strings.Join(rc.Nameservers, ","); got != "10.0.0.1,10.0.0.2" {
		t.Errorf("nameservers = %s", got)
	}
	if got := strings.Join(rc.Searches, ","); got != "example.org" {
		t.Errorf("searches (from domain) = %s", got)
	}
	if got := strings.Join(rc.Options, ","); got != "ndots:2,rotate" {
		t.Errorf("options = %s", got)
	}
	rc = ParseResolvConf([]byte("search a b\ndomain c\n"))
	if got := strings.Join(rc.Searches, ","); got != "a,b" {
		t.Errorf("search beats domain: %s", got)
	}
}

func TestPodResolvConf(t *testing.T) {
	host := []byte("# host file\nnameserver 10.0.0.1\nsearch corp.example\noptions ndots:2 edns0\n")
	five := "5"
	cfg := &corev1.PodDNSConfig{
		Nameservers: []string{"10.0.0.1", "1.1.1.1", "8.8.8.8", "9.9.9.9"},
		Searches:    []string{"svc.example", "corp.example"},
		Options:     []corev1.PodDNSConfigOption{{Name: "ndots", Value: &five}, {Name: "single-request"}},
	}
	cases := []struct {
		name string
		host []byte
		none bool
		cfg  *corev1.PodDNSConfig
		want string
	}{
		{"copy verbatim", host, false, nil, string(host)},
		{"no host file", nil, false, nil, ""},
		{"none without config", host, true, nil, ""},
		{"merged", host, false, cfg,
			"nameserver 10.0.0.1\nnameserver 1.1.1.1\nnameserver 8.8.8.8\nsearch corp.example svc.example\noptions ndots:5 edns0 single-request\n"},
		{"none uses only dnsConfig", host, true, &corev1.PodDNSConfig{Nameservers: []string{"1.1.1.1"}, Searches: []string{"x"}},
			"nameserver 1.1.1.1\nsearch x\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(PodResolvConf(tc.host, tc.none, tc.cfg)); got != tc.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}

func TestOnlyLoopback(t *testing.T) {
	if !onlyLoopback([]string{"127.0.0.53"}) || onlyLoopback([]string{"127.0.0.53", "10.0.0.1"}) || onlyLoopback(nil) {
		t.Error("onlyLoopback misclassifies")
	}
}
