package volumes

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// The termination-log file is per instance, empty, mode 0666 whatever the
// umask, under the pod's directory, and goes with Cleanup.
func TestTerminationLog(t *testing.T) {
	m := New(t.TempDir())
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	p1, err := m.TerminationLog("uid-1", "app", "c1")
	if err != nil {
		t.Fatal(err)
	}
	p2, err := m.TerminationLog("uid-1", "app", "c2")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(m.Root, "uid-1", "app.c1.termination-log"); p1 != want || p2 == p1 {
		t.Fatalf("paths %q %q, want %q and another", p1, p2, want)
	}
	st, err := os.Stat(p1)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o666 || st.Size() != 0 {
		t.Fatalf("mode %v size %d, want 0666 and empty", st.Mode().Perm(), st.Size())
	}
	if err := m.Cleanup(context.Background(), "uid-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p1); !os.IsNotExist(err) {
		t.Fatalf("file left after Cleanup: %v", err)
	}
}
