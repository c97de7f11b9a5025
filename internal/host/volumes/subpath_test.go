package volumes

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"

	"github.com/podhost/podhost/internal/host/spec"
)

func TestOpenSubPath(t *testing.T) {
	outside := t.TempDir()
	base := filepath.Join(t.TempDir(), "vol")
	must(t, os.Mkdir(base, 0o755))
	must(t, os.Chmod(base, 0o777))
	must(t, os.Mkdir(filepath.Join(base, "dir"), 0o755))
	must(t, os.WriteFile(filepath.Join(base, "file"), nil, 0o644))
	must(t, os.Symlink("dir", filepath.Join(base, "in")))
	must(t, os.Symlink("/", filepath.Join(base, "esc")))
	must(t, os.Symlink(outside, filepath.Join(base, "out")))
	tests := []struct {
		name, sub, want, wantErr string
	}{
		{name: "existing dir", sub: "dir", want: "dir"},
		{name: "existing file", sub: "file", want: "file"},
		{name: "missing is created", sub: "new/deeper", want: "new/deeper"},
		{name: "symlink inside resolves", sub: "in", want: "dir"},
		{name: "created below an inside symlink", sub: "in/made", want: "dir/made"},
		{name: "symlink to host root", sub: "esc", wantErr: "resolves outside its volume"},
		{name: "symlink below escapes", sub: "esc/etc", wantErr: "resolves outside its volume"},
		{name: "missing below an escaping symlink", sub: "out/made", wantErr: "outside the volume"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fd, got, err := openSubPath(base, tt.sub)
			if err == nil {
				_ = unix.Close(fd)
			}
			switch want := filepath.Join(base, tt.want); {
			case tt.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
			case err != nil:
				t.Fatal(err)
			case got != want:
				t.Fatalf("got %q, want %q", got, want)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(outside, "made")); err == nil {
		t.Error("a directory was created outside the volume")
	}
	for _, dir := range []string{"new", "new/deeper", "dir/made"} {
		fi, err := os.Stat(filepath.Join(base, dir))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o777 {
			t.Errorf("%s: mode %v, want the volume root's 0777", dir, fi.Mode())
		}
	}
}

func TestOpenNoSymlinksRefusesSymlinkComponent(t *testing.T) {
	base := t.TempDir()
	must(t, os.Mkdir(filepath.Join(base, "dir"), 0o755))
	must(t, os.Symlink("dir", filepath.Join(base, "link")))
	if _, err := openNoSymlinks(base, filepath.Join(base, "link")); err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Fatalf("err = %v, want a symlink error", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// PrepareSubPath bind-mounts the opened subPath under the pod dir: swapping
// the path for a symlink afterwards changes nothing in what is mounted, a
// new attempt replaces the mount, and Cleanup unmounts it without touching
// the volume's files.
func TestPrepareSubPathBindsTheOpenedPath(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (bind mounts)")
	}
	m := New(t.TempDir())
	vol := t.TempDir()
	must(t, os.Mkdir(filepath.Join(vol, "data"), 0o755))
	must(t, os.WriteFile(filepath.Join(vol, "data", "keep"), []byte("x"), 0o644))
	ctx := context.Background()
	t.Cleanup(func() { _ = m.Cleanup(ctx, "u-sub") })
	sp := spec.SubPathMount{Volume: "v", Container: "c", Index: 0, VolumePath: vol, Path: "data"}
	target, err := m.PrepareSubPath("u-sub", sp)
	must(t, err)
	if want := filepath.Join(m.PodDir("u-sub"), "volume-subpaths", "v", "c", "0"); target != want {
		t.Fatalf("target %q, want %q", target, want)
	}
	// The pod swaps the checked directory for a symlink to /: the mount
	// still holds the directory that was checked.
	must(t, os.Rename(filepath.Join(vol, "data"), filepath.Join(vol, "moved")))
	must(t, os.Symlink("/", filepath.Join(vol, "data")))
	if _, err := os.Stat(filepath.Join(target, "keep")); err != nil {
		t.Fatalf("bind mount does not hold the checked directory: %v", err)
	}
	if _, err := m.PrepareSubPath("u-sub", sp); err == nil || !strings.Contains(err.Error(), "outside its volume") {
		t.Fatalf("err = %v, want the symlink to / refused", err)
	}
	sp.Path = "moved"
	_, err = m.PrepareSubPath("u-sub", sp)
	must(t, err)
	sp.Index, sp.Path = 1, "moved/keep"
	file, err := m.PrepareSubPath("u-sub", sp)
	must(t, err)
	if b, err := os.ReadFile(file); err != nil || string(b) != "x" {
		t.Fatalf("file subPath: %q, %v", b, err)
	}
	mounts, _ := mountinfo.GetMounts(mountinfo.PrefixFilter(m.PodDir("u-sub")))
	if len(mounts) != 2 {
		t.Fatalf("%d mounts under the pod dir, want 2 (no stacking)", len(mounts))
	}
	must(t, m.Cleanup(ctx, "u-sub"))
	if _, err := os.Stat(filepath.Join(vol, "moved", "keep")); err != nil {
		t.Fatalf("Cleanup removed the volume's file: %v", err)
	}
	if left, _ := mountinfo.GetMounts(mountinfo.PrefixFilter(m.Root)); len(left) != 0 {
		t.Fatalf("mounts left: %v", left[0].Mountpoint)
	}
}

func TestPrepareSubPathRefusesBadNames(t *testing.T) {
	m := New(t.TempDir())
	for _, sp := range []spec.SubPathMount{{Volume: "..", Container: "c"}, {Volume: "v", Container: "a/b"}} {
		if _, err := m.PrepareSubPath("u", sp); err == nil {
			t.Errorf("%+v accepted", sp)
		}
	}
}

func TestWithin(t *testing.T) {
	tests := []struct {
		base, p string
		want    bool
	}{
		{"/a", "/a", true},
		{"/a", "/a/b", true},
		{"/a", "/ab", false},
		{"/a", "/", false},
		{"/a/b", "/a", false},
		{"/a", "/a/..b", true},
		{"/", "/", true},
		{"/", "/etc", true},
	}
	for _, tt := range tests {
		if got := within(tt.base, tt.p); got != tt.want {
			t.Errorf("within(%q, %q) = %v, want %v", tt.base, tt.p, got, tt.want)
		}
	}
}

// A subPath of a volume that is the host's / (hostPath /) is below it,
// existing or created, as the kubelet's PathWithinBase has it.
func TestOpenSubPathOfRootVolume(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	must(t, err)
	sub := strings.TrimPrefix(dir, "/")
	for _, s := range []string{sub, sub + "/made/deeper"} {
		fd, got, err := openSubPath("/", s)
		if err != nil {
			t.Fatalf("subPath %q of /: %v", s, err)
		}
		_ = unix.Close(fd)
		if got != "/"+s {
			t.Fatalf("got %q, want %q", got, "/"+s)
		}
	}
}
