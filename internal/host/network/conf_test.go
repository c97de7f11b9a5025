package network

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestDefaultConfWritten(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "net.d")
	m, err := New(Config{ConfDir: dir, CacheDir: t.TempDir(), IPAMDataDir: "/tmp/leases", Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, DefaultConfFile))
	if err != nil {
		t.Fatal(err)
	}
	var conf struct {
		Name    string           `json:"name"`
		Plugins []map[string]any `json:"plugins"`
	}
	if err := json.Unmarshal(b, &conf); err != nil {
		t.Fatal(err)
	}
	if conf.Name != "podhost" || len(conf.Plugins) != 2 || conf.Plugins[0]["type"] != "bridge" || conf.Plugins[1]["type"] != "portmap" {
		t.Fatalf("conf = %s", b)
	}
	br := conf.Plugins[0]
	if br["bridge"] != "podhost0" || br["isGateway"] != true || br["ipMasq"] != true || br["hairpinMode"] != true {
		t.Errorf("bridge = %v", br)
	}
	ipam := br["ipam"].(map[string]any)
	if ipam["type"] != "host-local" || ipam["dataDir"] != "/tmp/leases" || !reflect.DeepEqual(ipam["ranges"], []any{[]any{map[string]any{"subnet": "10.89.0.0/16"}}}) {
		t.Errorf("ipam = %v", ipam)
	}
	if !reflect.DeepEqual(conf.Plugins[1]["capabilities"], map[string]any{"portMappings": true}) {
		t.Errorf("portmap = %v", conf.Plugins[1])
	}
	nets := m.cni.GetConfig().Networks
	if len(nets) != 2 || nets[0].IFName != "lo" || nets[1].IFName != "eth0" || m.netName != "podhost" {
		t.Errorf("loaded networks: %d, netName %q", len(nets), m.netName)
	}
}

func TestExistingConfKept(t *testing.T) {
	dir := t.TempDir()
	own := `{"cniVersion":"1.0.0","name":"mine","plugins":[{"type":"ptp","ipam":{"type":"host-local","subnet":"10.99.0.0/24"}}]}`
	if err := os.WriteFile(filepath.Join(dir, "50-mine.conflist"), []byte(own), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := New(Config{ConfDir: dir, CacheDir: t.TempDir(), Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, DefaultConfFile)); !os.IsNotExist(err) {
		t.Error("default conflist written although the dir had a config")
	}
	if m.netName != "mine" {
		t.Errorf("netName = %q", m.netName)
	}
}

func TestPortMappings(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{
			{Name: "init", Ports: []corev1.ContainerPort{{ContainerPort: 1, HostPort: 1001}}},
			{Name: "sidecar", RestartPolicy: &always, Ports: []corev1.ContainerPort{{ContainerPort: 9090, HostPort: 19090}}},
		},
		Containers: []corev1.Container{
			{Name: "a", Ports: []corev1.ContainerPort{
				{ContainerPort: 80, HostPort: 8080},
				{ContainerPort: 81},
				{ContainerPort: 53, HostPort: 5353, Protocol: corev1.ProtocolUDP, HostIP: "127.0.0.1"},
				{ContainerPort: 80, HostPort: 8080, Protocol: corev1.ProtocolTCP},
			}},
		},
	}}
	want := []PortMapping{
		{HostPort: 19090, ContainerPort: 9090, Protocol: "tcp"},
		{HostPort: 8080, ContainerPort: 80, Protocol: "tcp"},
		{HostPort: 5353, ContainerPort: 53, Protocol: "udp", HostIP: "127.0.0.1"},
	}
	if got := PortMappings(pod); !reflect.DeepEqual(got, want) {
		t.Errorf("PortMappings = %+v, want %+v", got, want)
	}
	if got := PortMappings(&corev1.Pod{}); got != nil {
		t.Errorf("no ports: %v", got)
	}
}

func TestMasqHelpers(t *testing.T) {
	// utils.FormatChainName("podhost", "abc") from containernetworking/plugins
	if got := masqChain("podhost", "abc"); len(got) != 28 || got[:4] != "CNI-" {
		t.Errorf("masqChain = %q", got)
	}
	for _, c := range []struct {
		line string
		want []string
	}{
		{`-A POSTROUTING -s 10.0.0.2/32 -m comment --comment "name: \"podhost\" id: \"x\"" -j CNI-aaaa`,
			[]string{"-s", "10.0.0.2/32", "-m", "comment", "--comment", `name: "podhost" id: "x"`, "-j", "CNI-aaaa"}},
		{`-A POSTROUTING -s 10.0.0.4/32 -j CNI-aaaa`, []string{"-s", "10.0.0.4/32", "-j", "CNI-aaaa"}},
		{`-A POSTROUTING -s 10.0.0.3/32 -j CNI-bbbb`, nil},
		{`-A POSTROUTING -m comment --comment "CNI portfwd requiring masquerade" -j CNI-HOSTPORT-MASQ`, nil},
		{`-N CNI-aaaa`, nil},
		{`-A POSTROUTING -m comment --comment "unterminated -j CNI-aaaa`, nil},
	} {
		got, ok := jumpSpec(c.line, "CNI-aaaa")
		if ok != (c.want != nil) || !reflect.DeepEqual(got, c.want) {
			t.Errorf("jumpSpec(%q) = %q, %v; want %q", c.line, got, ok, c.want)
		}
	}
}
