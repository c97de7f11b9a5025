package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestManagedHosts(t *testing.T) {
	got := string(managedHosts("web", "", []string{"10.89.0.5", "fd00::5"})) +
		string(hostAliases([]corev1.HostAlias{{IP: "10.1.1.1", Hostnames: []string{"db", "db.local"}}}))
	want := `# Kubernetes-managed hosts file.
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
	// With a domain (spec.subdomain): the kubelet's "IP\t<hostname>.<domain>\t<hostname>".
	if got := string(managedHosts("web", "db.default.svc.", []string{"10.89.0.5"})); !strings.HasSuffix(got, "\n10.89.0.5\tweb.db.default.svc.\tweb\n") {
		t.Errorf("hosts with a domain:\n%s", got)
	}
	if hostAliases(nil) != nil {
		t.Error("no aliases must add nothing")
	}
}

// The pod's /etc/hostname (and UTS hostname) is GetNodenameForKernel's:
// the FQDN with setHostnameAsFQDN; one over 64 characters fails the
// sandbox.
func TestManagerHostname(t *testing.T) {
	yes := true
	pod := testPod("web")
	pod.Spec.Subdomain, pod.Spec.SetHostnameAsFQDN = "db", &yes
	for _, tc := range []struct{ domain, want, err string }{
		{"", "web.db.default.svc.", ""},
		{"cluster.local", "web.db.default.svc.cluster.local", ""},
		{strings.Repeat("d", 40) + ".example", "", "FQDN web.db.default.svc." + strings.Repeat("d", 40) + ".example is too long (64 characters is the max, 67 characters requested)"},
	} {
		got, err := NewManager(t.TempDir(), WithClusterDomain(tc.domain)).hostname(pod)
		if got != tc.want || (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("clusterDomain %q: %q, %v; want %q, %q", tc.domain, got, err, tc.want, tc.err)
		}
	}
}

// WriteHosts rewrites the file in place (containers bind-mount its inode),
// a hostNetwork pod's from the host's current file, with the kubelet's
// headers.
func TestWriteHostsInPlace(t *testing.T) {
	dir := t.TempDir()
	hostHosts := filepath.Join(dir, "etc-hosts")
	if err := os.WriteFile(hostHosts, []byte("10.0.0.1\tnode\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m := NewManager(dir, WithClusterDomain("cluster.test"))
	m.hostHosts = hostHosts
	p := Paths{Hosts: filepath.Join(dir, "hosts")}
	pod := testPod("web")
	pod.Spec.HostAliases = []corev1.HostAlias{{IP: "10.1.1.1", Hostnames: []string{"db"}}}
	if err := m.WriteHosts(p, pod, nil); err != nil {
		t.Fatal(err)
	}
	before := inode(t, p.Hosts)
	pod.Spec.Subdomain = "db"
	if err := m.WriteHosts(p, pod, []string{"10.89.0.5"}); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, p.Hosts); !strings.HasPrefix(got, "# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n") ||
		!strings.Contains(got, "10.89.0.5\tweb.db.default.svc.cluster.test\tweb\n\n# Entries added by HostAliases.\n10.1.1.1\tdb\n") {
		t.Errorf("hosts:\n%s", got)
	}
	if inode(t, p.Hosts) != before {
		t.Error("hosts file replaced: a running container would keep the old content")
	}
	pod.Spec.HostNetwork = true
	if err := os.WriteFile(hostHosts, []byte("10.0.0.2\tnode\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := m.WriteHosts(p, pod, nil); err != nil {
		t.Fatal(err)
	}
	want := "# Kubernetes-managed hosts file (host network).\n10.0.0.2\tnode\n\n# Entries added by HostAliases.\n10.1.1.1\tdb\n"
	if got := readFile(t, p.Hosts); got != want {
		t.Errorf("hostNetwork hosts = %q, want %q", got, want)
	}
	if fi, err := os.Stat(p.Hosts); err != nil || fi.Mode().Perm() != 0o644 || inode(t, p.Hosts) != before {
		t.Errorf("mode %v (%v) or inode changed", fi.Mode(), err)
	}
}

func TestParseResolvConf(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     ResolvConf
		err      bool
	}{
		{"comments, domain and sortlist ignored", "# comment\n  # indented\ndomain example.org\nsortlist 10.0.0.0/8\nnameserver 10.0.0.1\nnameserver   10.0.0.2 extra\n",
			ResolvConf{Nameservers: []string{"10.0.0.1", "10.0.0.2"}}, false},
		{"last search wins, dots", "search a b\nsearch c. . d\ndomain e\n", ResolvConf{Searches: []string{"c", "d"}}, false},
		{"stub search .", "nameserver 127.0.0.53\nsearch .\n", ResolvConf{Nameservers: []string{"127.0.0.53"}}, false},
		{"options accumulate, same name replaced", "options ndots:2 rotate\noptions timeout:1 ndots:3\n",
			ResolvConf{Options: []string{"ndots:3", "rotate", "timeout:1"}}, false},
		{"empty nameserver", "nameserver\nnameserver 10.0.0.1\n", ResolvConf{Nameservers: []string{"10.0.0.1"}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseResolvConf([]byte(tc.in))
			if (err != nil) != tc.err {
				t.Fatalf("err = %v, want error %v", err, tc.err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// The host file of the brief: the kubelet's resolv.conf for each policy
// (pkg/kubelet/network/dns GetPodDNS, no cluster DNS), as containerd writes it.
func TestPodDNS(t *testing.T) {
	host, err := ParseResolvConf([]byte("domain lan\nnameserver 10.0.0.1\nnameserver 10.0.0.2\nnameserver 10.0.0.3\nnameserver 10.0.0.4\noptions rotate\noptions timeout:1\n"))
	if err != nil {
		t.Fatal(err)
	}
	five := "5"
	three := "nameserver 10.0.0.1\nnameserver 10.0.0.2\nnameserver 10.0.0.3\n"
	nsWarn := "Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: 10.0.0.1 10.0.0.2 10.0.0.3"
	var many []string
	for i := range 33 {
		many = append(many, fmt.Sprintf("d%d.example", i))
	}
	long := []string{strings.Repeat("x", 254), "ok"}
	cases := []struct {
		name        string
		policy      corev1.DNSPolicy
		hostNetwork bool
		cfg         *corev1.PodDNSConfig
		want        string
		warnings    []string
	}{
		{"Default", corev1.DNSDefault, false, nil, three + "options rotate timeout:1\n", []string{nsWarn}},
		{"ClusterFirst", corev1.DNSClusterFirst, false, nil, three + "options rotate timeout:1\n", []string{nsWarn}},
		{"ClusterFirstWithHostNet", corev1.DNSClusterFirstWithHostNet, true, nil, three + "options rotate timeout:1\n", []string{nsWarn}},
		{"None", corev1.DNSNone, false, nil, "", nil},
		{"None with dnsConfig", corev1.DNSNone, false, &corev1.PodDNSConfig{Nameservers: []string{"1.1.1.1"}, Searches: []string{"x", "."}},
			"search x .\nnameserver 1.1.1.1\n", nil},
		{"dnsConfig appended", corev1.DNSClusterFirst, false, &corev1.PodDNSConfig{
			Nameservers: []string{"10.0.0.2", "9.9.9.9"}, Searches: []string{"svc.example", "svc.example"},
			Options: []corev1.PodDNSConfigOption{{Name: "ndots", Value: &five}, {Name: "timeout"}}},
			"search svc.example\n" + three + "options rotate timeout ndots:5\n", []string{nsWarn}},
		{"33 searches", corev1.DNSNone, false, &corev1.PodDNSConfig{Searches: many},
			"search " + strings.Join(many[:32], " ") + "\n",
			[]string{"Search Line limits were exceeded, some search paths have been omitted, the applied search line is: " + strings.Join(many[:32], " ")}},
		{"search over 253", corev1.DNSNone, false, &corev1.PodDNSConfig{Searches: long}, "search ok\n",
			[]string{"Search Line limits were exceeded, some search paths have been omitted, the applied search line is: ok"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: corev1.PodSpec{DNSPolicy: tc.policy, HostNetwork: tc.hostNetwork, DNSConfig: tc.cfg}}
			rc, warnings := PodDNS(host, pod)
			if got := string(rc.Format()); got != tc.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, tc.want)
			}
			if !reflect.DeepEqual(warnings, tc.warnings) {
				t.Errorf("warnings = %q, want %q", warnings, tc.warnings)
			}
		})
	}
}

func TestFitSearchesLineLength(t *testing.T) {
	var in []string
	for i := range 10 {
		in = append(in, fmt.Sprintf("%03d", i)+strings.Repeat("y", 246)) // 249 chars, 250 with the space
	}
	got, cut := fitSearches(in)
	if !cut || len(got) != 8 || len(strings.Join(got, " ")) > maxSearchListChars {
		t.Errorf("kept %d (%d chars), cut %v", len(got), len(strings.Join(got, " ")), cut)
	}
}

// The manager records each DNSConfigForming message as a warning event and
// parses the host file even without a dnsConfig.
func TestResolvConfEvents(t *testing.T) {
	resolv := filepath.Join(t.TempDir(), "resolv.conf")
	if err := os.WriteFile(resolv, []byte("domain lan\nnameserver 1.1.1.1\nnameserver 2.2.2.2\nnameserver 3.3.3.3\nnameserver 4.4.4.4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var got []string
	m := NewManager(t.TempDir(), WithHostResolvConf(resolv), WithRecorder(func(uid types.UID, typ, reason, msg string) {
		got = append(got, string(uid)+" "+typ+" "+reason+": "+msg)
	}))
	b, err := m.resolvConf(testPod("web"))
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != "nameserver 1.1.1.1\nnameserver 2.2.2.2\nnameserver 3.3.3.3\n" {
		t.Errorf("resolv.conf = %q", b)
	}
	want := []string{"u1 Warning DNSConfigForming: Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: 1.1.1.1 2.2.2.2 3.3.3.3"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("events = %q, want %q", got, want)
	}
	if err := os.WriteFile(resolv, []byte("nameserver\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := m.resolvConf(testPod("web")); err == nil || !strings.Contains(err.Error(), "nameserver list is empty") {
		t.Errorf("empty nameserver line: err = %v", err)
	}
}

func TestOnlyLoopback(t *testing.T) {
	if !onlyLoopback([]string{"127.0.0.53"}) || onlyLoopback([]string{"127.0.0.53", "10.0.0.1"}) || onlyLoopback(nil) {
		t.Error("onlyLoopback misclassifies")
	}
}

// An unchanged hosts file is not rewritten (its running containers never
// read it truncated), but still gets its mode back.
func TestWriteInPlaceLeavesSameContent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(path, []byte("same\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
	if err := writeInPlace(path, []byte("same\n")); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if !fi.ModTime().Equal(old) || fi.Mode().Perm() != 0o644 {
		t.Fatalf("mtime %v (want %v, untouched), mode %v", fi.ModTime(), old, fi.Mode().Perm())
	}
	if err := writeInPlace(path, []byte("new\n")); err != nil || readFile(t, path) != "new\n" {
		t.Fatalf("a changed file: %v, %q", err, readFile(t, path))
	}
}

// WithPodDNS: the pods it picks (the cluster's) get its servers and
// domain; the others podhost's own cluster DNS.
func TestResolvConfPodDNS(t *testing.T) {
	resolv := filepath.Join(t.TempDir(), "resolv.conf")
	if err := os.WriteFile(resolv, []byte("search lan\nnameserver 1.1.1.1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m := NewManager(t.TempDir(), WithHostResolvConf(resolv), WithClusterDNS("10.89.0.1"), WithClusterDomain("podhost.local"),
		WithPodDNS(func(p *corev1.Pod) ([]string, string, bool) {
			return []string{"10.96.0.10"}, "cluster.local", p.Name == "from-cluster"
		}))
	for name, want := range map[string]string{
		"from-cluster": "search default.svc.cluster.local svc.cluster.local cluster.local lan\nnameserver 10.96.0.10\noptions ndots:5\n",
		"local":        "search default.svc.podhost.local svc.podhost.local podhost.local lan\nnameserver 10.89.0.1\noptions ndots:5\n",
	} {
		p := testPod(name)
		p.Spec.DNSPolicy = corev1.DNSClusterFirst
		b, err := m.resolvConf(p)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != want {
			t.Errorf("%s: resolv.conf %q, want %q", name, b, want)
		}
	}
}
