package daemon

import (
	"os"
	"path/filepath"
	"testing"
)

// TestSwapControllerAvailable: the kubelet's check, v1 (memsw file in the
// memory hierarchy) and v2 (memory.swap.max in the cgroup podhost runs in).
func TestSwapControllerAvailable(t *testing.T) {
	touch := func(p string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	v1 := t.TempDir()
	if swapControllerAvailable(v1, false, "") {
		t.Error("v1 without memsw: available")
	}
	touch(filepath.Join(v1, "memory", "memory.memsw.limit_in_bytes"))
	if !swapControllerAvailable(v1, false, "") {
		t.Error("v1 with memsw: not available")
	}
	v2 := t.TempDir()
	self := "0::/system.slice/podhost.service\n"
	if swapControllerAvailable(v2, true, self) {
		t.Error("v2 without memory.swap.max: available")
	}
	touch(filepath.Join(v2, "memory.swap.max")) // the root's does not count
	if swapControllerAvailable(v2, true, self) {
		t.Error("v2 with memory.swap.max only at the root: available")
	}
	touch(filepath.Join(v2, "system.slice", "podhost.service", "memory.swap.max"))
	if !swapControllerAvailable(v2, true, self) {
		t.Error("v2 with memory.swap.max in podhost's cgroup: not available")
	}
	if swapControllerAvailable(v2, true, "1:name=systemd:/x\n") {
		t.Error("v2 with no unified line: available")
	}
}
