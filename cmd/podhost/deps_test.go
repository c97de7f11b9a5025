package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoMemoryProfiler keeps runtime/pprof out of the shipped binary: when
// nothing can read the heap profile, the linker turns the runtime's
// allocation sampling off, whose buckets are never freed in a daemon that
// runs for months (docs/decisions.md 16). Profiling builds use -tags pprof.
func TestNoMemoryProfiler(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, p := range strings.Fields(string(out)) {
		if p == "runtime/pprof" || p == "net/http/pprof" {
			t.Errorf("podhost links %s: the runtime keeps a sampled heap profile (use -tags pprof for profiling builds)", p)
		}
	}
}
