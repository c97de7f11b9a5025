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
