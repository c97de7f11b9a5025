package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDepsStdlibOnly keeps the per-container driver small: besides the
// standard library it may only import internal/logs/driver (no k8s.io, no
// containerd, no grpc, no cobra: their init work and data would be paid
// once per running container).
func TestDepsStdlibOnly(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	allowed := map[string]bool{
		"github.com/podhost/podhost/cmd/podhost-log-driver": true,
		"github.com/podhost/podhost/internal/logs/driver":   true,
	}
	var n int
	for _, p := range strings.Fields(string(out)) {
		n++
		if !allowed[p] {
			t.Errorf("podhost-log-driver depends on %s: only the standard library and internal/logs/driver are allowed", p)
		}
	}
	if n != len(allowed) {
		t.Fatalf("go list found %d non-standard packages, want %d: %s", n, len(allowed), out)
	}
}
