package daemon

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
)

// A temp mount a killed podhost left behind is unmounted and its dir
// removed at start; what was mounted there keeps its files.
func TestOwnTempMountsCleansLeftovers(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount")
	}
	root := t.TempDir()
	dir := filepath.Join(root, "tmpmounts")
	host := filepath.Join(root, "snapshot")
	left := filepath.Join(dir, "containerd-mount123")
	for _, d := range []string{host, left} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(host, "passwd"), []byte("root:x:0:0::/:/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount(host, left, "", unix.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Unmount(left, unix.MNT_DETACH) })
	if err := ownTempMounts(dir, slog.New(slog.NewTextHandler(io.Discard, nil))); err != nil {
		t.Fatal(err)
	}
	if mounted, err := mountinfo.Mounted(left); err == nil && mounted {
		t.Fatal("the leftover temp mount is still mounted")
	}
	if _, err := os.Stat(left); !os.IsNotExist(err) {
		t.Fatalf("the leftover dir: %v", err)
	}
	if _, err := os.Stat(filepath.Join(host, "passwd")); err != nil {
		t.Fatalf("the mounted files: %v", err)
	}
}
