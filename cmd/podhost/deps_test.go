package main

import (
	"os/exec"
	"runtime"
	"strings"
	"testing"
)

// TestNoMemoryProfiler keeps the profiling endpoints out of the shipped
// binary and its allocation sampling off: the heap profile's buckets are
// never freed in a daemon that runs for months (docs/decisions.md 16).
// runtime/pprof itself is linked (grpc imports it), so memprofile.go sets
// the rate to 0. Profiling builds use -tags pprof.
func TestNoMemoryProfiler(t *testing.T) {
	if runtime.MemProfileRate != 0 {
		t.Errorf("runtime.MemProfileRate is %d: the heap profile samples allocations", runtime.MemProfileRate)
	}
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, p := range strings.Fields(string(out)) {
		if p == "net/http/pprof" {
			t.Errorf("podhost links %s: the runtime keeps a sampled heap profile (use -tags pprof for profiling builds)", p)
		}
	}
}

// TestSmallBinariesStdlibOnly keeps the processes podhost runs once per
// container (podhost-log-driver) or per pod (podhost-pause) small: besides
// the standard library each may only import its own package (no k8s.io, no
// containerd, no grpc, no cobra: their init work and data would be paid by
// every copy).
func TestSmallBinariesStdlibOnly(t *testing.T) {
	for dir, pkg := range map[string]string{
		"../podhost-log-driver": "internal/logs/driver",
		"../podhost-pause":      "internal/host/sandbox/pause",
	} {
		cmd := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".")
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps in %s: %v\n%s", dir, err, out)
		}
		allowed := map[string]bool{
			"github.com/podhost/podhost/cmd/" + strings.TrimPrefix(dir, "../"): true,
			"github.com/podhost/podhost/" + pkg:                                true,
		}
		got := strings.Fields(string(out))
		for _, p := range got {
			if !allowed[p] {
				t.Errorf("%s depends on %s: only the standard library and %s are allowed", dir, p, pkg)
			}
		}
		if len(got) != len(allowed) {
			t.Errorf("%s: go list found %d non-standard packages, want %d: %s", dir, len(got), len(allowed), out)
		}
	}
}
