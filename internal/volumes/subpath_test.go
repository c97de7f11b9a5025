package volumes

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSubPath(t *testing.T) {
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
			got, err := SubPath(base, tt.sub)
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
