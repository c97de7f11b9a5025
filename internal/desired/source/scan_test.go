package source

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestIsManifestName(t *testing.T) {
	tests := map[string]bool{
		"web.yaml": true, "web.yml": true, "web.json": true, "WEB.YAML": true,
		".web.yaml": false, ".web.yaml.swp": false, "web.yaml.swp": false, "web.yaml.swx": false,
		"web.yaml~": false, "#web.yaml#": false, "4913": false, "web.yaml.bak": false,
		"web.yaml.tmp": false, "web.yaml.orig": false, "web.bak.yaml": true, "README.md": false,
		"web": false, "": false, ".podhost-x.tmp": false,
	}
	for name, want := range tests {
		if got := IsManifestName(name); got != want {
			t.Errorf("IsManifestName(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestScan(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		setup func(t *testing.T, dir string)
		want  string
		// wantErr substrings, in Errors order
		wantErr []string
	}{
		{name: "empty dir", want: ""},
		{
			name:  "pods and ignored files",
			files: map[string]string{"a.yaml": podYAML("a", "img:1"), "b.json": `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"b"},"spec":{"containers":[{"name":"c","image":"img:2"}]}}`, "c.yaml~": podYAML("c", "x"), ".d.yaml": podYAML("d", "x"), "README.md": "hi", "e.yaml.bak": podYAML("e", "x")},
			want:  "default/a=img:1 default/b=img:2",
		},
		{
			name:  "multi-doc",
			files: map[string]string{"all.yaml": podYAML("a", "img:1") + "---\n" + podYAML("b", "img:2")},
			want:  "default/a=img:1 default/b=img:2",
		},
		{
			name:    "invalid file changes nothing else",
			files:   map[string]string{"a.yaml": podYAML("a", "img:1"), "bad.yaml": "apiVersion: v1\nkind: Pod\nmetadata: {name: bad}\nspec: {containers: [{name: c}]}\n"},
			want:    "default/a=img:1 ERR bad.yaml",
			wantErr: []string{"bad.yaml: spec.containers[0].image: Required value"},
		},
		{
			name:    "duplicate: first file wins",
			files:   map[string]string{"a.yaml": podYAML("web", "img:a"), "b.yaml": podYAML("web", "img:b")},
			want:    "default/web=img:a ERR b.yaml",
			wantErr: []string{"b.yaml: duplicate pod default/web, already defined in a.yaml"},
		},
		{
			name:    "too large",
			files:   map[string]string{"big.yaml": strings.Repeat("#", 2<<20)},
			wantErr: []string{"big.yaml: file is 2097152 bytes, more than the 1048576-byte limit"},
			want:    "ERR big.yaml",
		},
		{
			name:  "symlink followed",
			files: map[string]string{"target.txt": podYAML("l", "img:l")},
			setup: func(t *testing.T, dir string) {
				if err := os.Symlink(filepath.Join(dir, "target.txt"), filepath.Join(dir, "link.yaml")); err != nil {
					t.Fatal(err)
				}
			},
			want: "default/l=img:l",
		},
		{
			name: "dangling symlink",
			setup: func(t *testing.T, dir string) {
				if err := os.Symlink(filepath.Join(dir, "nowhere"), filepath.Join(dir, "link.yaml")); err != nil {
					t.Fatal(err)
				}
			},
			want: "ERR link.yaml", wantErr: []string{"link.yaml: dangling symlink"},
		},
		{
			name:    "world-writable file refused",
			files:   map[string]string{"a.yaml": podYAML("a", "img:1")},
			setup:   func(t *testing.T, dir string) { chmod(t, filepath.Join(dir, "a.yaml"), 0o666) },
			want:    "ERR a.yaml",
			wantErr: []string{"a.yaml: insecure permissions: mode 0666 is group- or world-writable"},
		},
		{
			name:    "non-root owner refused",
			files:   map[string]string{"a.yaml": podYAML("a", "img:1")},
			setup:   func(t *testing.T, dir string) { chown(t, filepath.Join(dir, "a.yaml"), 1000) },
			want:    "ERR a.yaml",
			wantErr: []string{"a.yaml: insecure permissions: owned by uid 1000, must be owned by root"},
		},
		{
			name:  "symlink target perms checked",
			files: map[string]string{"t.txt": podYAML("l", "img:l")},
			setup: func(t *testing.T, dir string) {
				chmod(t, filepath.Join(dir, "t.txt"), 0o662)
				if err := os.Symlink("t.txt", filepath.Join(dir, "link.yaml")); err != nil {
					t.Fatal(err)
				}
			},
			want: "ERR link.yaml", wantErr: []string{"link.yaml: insecure permissions"},
		},
		{
			name: "directory named like a manifest",
			setup: func(t *testing.T, dir string) {
				if err := os.Mkdir(filepath.Join(dir, "x.yaml"), 0o755); err != nil {
					t.Fatal(err)
				}
			},
			want: "ERR x.yaml", wantErr: []string{"x.yaml: not a regular file"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := secureDir(t)
			for name, content := range tt.files {
				writeFile(t, dir, name, content)
			}
			if tt.setup != nil {
				tt.setup(t, dir)
			}
			snap, err := Scan(dir, false)
			if err != nil {
				t.Fatal(err)
			}
			if got := summary(snap); got != tt.want {
				t.Errorf("snapshot = %q, want %q", got, tt.want)
			}
			if len(snap.Errors) != len(tt.wantErr) {
				t.Fatalf("errors = %v, want %d", snap.Errors, len(tt.wantErr))
			}
			for i, want := range tt.wantErr {
				if got := snap.Errors[i].Error(); !strings.Contains(got, want) {
					t.Errorf("error %d = %q, want containing %q", i, got, want)
				}
			}
		})
	}
}

func chmod(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

func chown(t *testing.T, path string, uid int) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to chown")
	}
	if err := os.Chown(path, uid, uid); err != nil {
		t.Fatal(err)
	}
}

func TestScanAllowInsecure(t *testing.T) {
	dir := secureDir(t)
	p := writeFile(t, dir, "a.yaml", podYAML("a", "img:1"))
	chmod(t, p, 0o666)
	chmod(t, dir, 0o777)
	if _, err := Scan(dir, false); !errors.Is(err, ErrInsecure) {
		t.Fatalf("insecure dir: err = %v, want ErrInsecure", err)
	}
	snap, err := Scan(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	if got := summary(snap); got != "default/a=img:1" {
		t.Errorf("snapshot = %q", got)
	}
}

func TestScanDirOwner(t *testing.T) {
	dir := secureDir(t)
	chown(t, dir, 1000)
	_, err := Scan(dir, false)
	if !errors.Is(err, ErrInsecure) || !strings.Contains(err.Error(), "owned by uid 1000") {
		t.Fatalf("err = %v", err)
	}
}

func TestScanMissingDir(t *testing.T) {
	_, err := Scan(filepath.Join(t.TempDir(), "nope"), false)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("err = %v, want not-exist", err)
	}
}

func TestScannerKeepsLastGood(t *testing.T) {
	dir := secureDir(t)
	writeFile(t, dir, "web.yaml", podYAML("web", "img:1")+"---\n"+podYAML("api", "img:1"))
	sc := newScanner(dir, false)
	if snap, err := sc.scan(); err != nil || summary(snap) != "default/api=img:1 default/web=img:1" {
		t.Fatalf("first scan = %q, %v", summary(snap), err)
	}
	writeFile(t, dir, "web.yaml", podYAML("web", "img:2")+"---\nkind: Pod\n")
	snap, err := sc.scan()
	if err != nil {
		t.Fatal(err)
	}
	want := "default/api=img:1 default/web=img:1 ERR web.yaml kept=default/web,default/api"
	if got := summary(snap); got != want {
		t.Fatalf("invalid scan = %q, want %q", got, want)
	}
	// Stateless Scan has no last good version.
	if snap, _ := Scan(dir, false); summary(snap) != "ERR web.yaml" {
		t.Errorf("Scan = %q", summary(snap))
	}
	if err := os.Remove(filepath.Join(dir, "web.yaml")); err != nil {
		t.Fatal(err)
	}
	if snap, _ := sc.scan(); summary(snap) != "" {
		t.Errorf("after delete = %q, want empty", summary(snap))
	}
}
