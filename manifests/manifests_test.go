// Tests that the shipped manifests stay valid: the example pods decode
// through podhost's own manifest decoder, config.yaml parses strictly and
// documents exactly the built-in defaults, the CNI conflist loads with
// libcni, and the systemd unit keeps the directives podhost relies on.
package manifests_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/containernetworking/cni/libcni"

	"github.com/podhost/podhost/internal/config"
	"github.com/podhost/podhost/internal/desired/manifest"
)

const testImage = "podhost.test/busybox:1"

func TestExamplesDecode(t *testing.T) {
	files, err := filepath.Glob("examples/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	names := map[string]string{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		pods, err := manifest.Decode(f, data)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		for _, p := range pods {
			if prev, dup := names[p.Name]; dup {
				t.Errorf("%s: pod %s also in %s", f, p.Name, prev)
			}
			names[p.Name] = f
			for _, c := range append(p.Spec.InitContainers, p.Spec.Containers...) {
				if c.Image != testImage {
					t.Errorf("%s: container %s uses %s; examples must use the offline image %s", f, c.Name, c.Image, testImage)
				}
			}
		}
	}
}

func TestConfigYAMLDocumentsDefaults(t *testing.T) {
	data, err := os.ReadFile("config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	got, err := config.Parse(data)
	if err != nil {
		t.Fatalf("config.yaml: %v", err)
	}
	if want := config.Default(); !reflect.DeepEqual(got, want) {
		t.Errorf("config.yaml does not state the defaults:\n got %+v\nwant %+v", got, want)
	}
}

func TestCNIConflist(t *testing.T) {
	list, err := libcni.ConfListFromFile("cni/10-podhost.conflist")
	if err != nil {
		t.Fatal(err)
	}
	if list.Name != "podhost" || len(list.Plugins) != 2 {
		t.Fatalf("name %q, %d plugins", list.Name, len(list.Plugins))
	}
	var bridge struct {
		Type, Bridge      string
		IsGateway, IPMasq bool
		IPAM              struct {
			Type    string
			Ranges  [][]struct{ Subnet string }
			DataDir string
		}
	}
	if err := json.Unmarshal(list.Plugins[0].Bytes, &bridge); err != nil {
		t.Fatal(err)
	}
	if bridge.Type != "bridge" || bridge.Bridge != "podhost0" || !bridge.IsGateway || !bridge.IPMasq ||
		bridge.IPAM.Type != "host-local" || len(bridge.IPAM.Ranges) != 1 || len(bridge.IPAM.Ranges[0]) != 1 ||
		bridge.IPAM.Ranges[0][0].Subnet != "10.89.0.0/16" || bridge.IPAM.DataDir != "/run/podhost/cni/networks" {
		t.Errorf("unexpected bridge plugin: %+v", bridge)
	}
	portmap := list.Plugins[1]
	if portmap.Network.Type != "portmap" || !portmap.Network.Capabilities["portMappings"] {
		t.Errorf("second plugin must be portmap with the portMappings capability: %s", portmap.Bytes)
	}
}

func TestSystemdUnit(t *testing.T) {
	data, err := os.ReadFile("systemd/podhost.service")
	if err != nil {
		t.Fatal(err)
	}
	lines := map[string]bool{}
	for _, l := range strings.Split(string(data), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			lines[l] = true
		}
	}
	for _, want := range []string{
		"Type=notify", "ExecStart=/usr/local/bin/podhost daemon", "KillMode=process",
		"Restart=always", "Requires=containerd.service", "After=containerd.service network-online.target",
	} {
		if !lines[want] {
			t.Errorf("podhost.service lacks %q", want)
		}
	}
	for l := range lines {
		if strings.HasPrefix(l, "Delegate=") || strings.HasPrefix(l, "RuntimeDirectory=") {
			t.Errorf("podhost.service must not set %q", l)
		}
	}
}
