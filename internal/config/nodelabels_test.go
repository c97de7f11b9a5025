package config

import (
	"strings"
	"testing"
)

// nodeLabels (the kubelet's --node-labels) are checked as labels.
func TestNodeLabels(t *testing.T) {
	for in, want := range map[string]string{
		"nodeLabels:\n  'bad key!': x\n": `nodeLabels: invalid key "bad key!"`,
		"nodeLabels:\n  zone: 'a b'\n":   `nodeLabels.zone: invalid value "a b"`,
	} {
		if _, err := Parse([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err %v, want %q", in, err, want)
		}
	}
	c, err := Parse([]byte("nodeLabels:\n  zone: edge-1\n  example.com/tier: gateway\n"))
	if err != nil || c.NodeLabels["zone"] != "edge-1" || c.NodeLabels["example.com/tier"] != "gateway" {
		t.Fatalf("nodeLabels = %v, %v", c, err)
	}
}
