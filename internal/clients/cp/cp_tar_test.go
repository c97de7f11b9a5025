package cp

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
)

// tarEntry is one entry of a test archive.
type tarEntry struct {
	name       string
	typ        byte
	body, link string
	mode       int64 // 0: 0644
}

func buildTar(t *testing.T, entries []tarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		mode := e.mode
		if mode == 0 {
			mode = 0o644
		}
		hdr := &tar.Header{Name: e.name, Typeflag: e.typ, Linkname: e.link, Mode: mode, Size: int64(len(e.body))}
		if e.typ != tar.TypeReg {
			hdr.Size = 0
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(e.body[:hdr.Size])); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// readTar lists an archive's entries: "name: body" for a file (its mode
// too if not 0644), "name/" for a directory, "name -> link" for a symlink.
func readTar(t *testing.T, r io.Reader) []string {
	t.Helper()
	var out []string
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		switch hdr.Typeflag {
		case tar.TypeDir:
			out = append(out, hdr.Name)
		case tar.TypeSymlink:
			out = append(out, hdr.Name+" -> "+hdr.Linkname)
		default:
			b, _ := io.ReadAll(tr)
			out = append(out, hdr.Name+": "+withMode(string(b), fs.FileMode(hdr.Mode).Perm()))
		}
	}
}

func withMode(body string, perm fs.FileMode) string {
	if perm == 0o644 {
		return body
	}
	return fmt.Sprintf("%s (%o)", body, perm)
}

// tree lists what is below dir, as readTar does (paths relative to dir).
func tree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			out = append(out, rel+"/")
		case fi.Mode()&fs.ModeSymlink != 0:
			link, _ := os.Readlink(p)
			out = append(out, rel+" -> "+link)
		default:
			b, _ := os.ReadFile(p)
			out = append(out, rel+": "+withMode(string(b), fi.Mode().Perm()))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// writeTree makes files below dir: "name/" a directory, "name -> link" a
// symlink, "name: body" a file.
func writeTree(t *testing.T, dir string, files ...string) {
	t.Helper()
	for _, f := range files {
		var err error
		name, body, isFile := strings.Cut(f, ": ")
		lname, link, isLink := strings.Cut(f, " -> ")
		switch {
		case isFile:
			p := filepath.Join(dir, name)
			if err = os.MkdirAll(filepath.Dir(p), 0o755); err == nil {
				err = os.WriteFile(p, []byte(body), 0o644)
			}
		case isLink:
			p := filepath.Join(dir, lname)
			if err = os.MkdirAll(filepath.Dir(p), 0o755); err == nil {
				err = os.Symlink(link, p)
			}
		default:
			err = os.MkdirAll(filepath.Join(dir, f), 0o755)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestMakeTar(t *testing.T) {
	for _, tc := range []struct {
		name      string
		files     []string // below the temp dir
		src, dest string
		want      []string
		warn      string
	}{
		{name: "file", files: []string{"f: hi"}, src: "f", dest: "x", want: []string{"x: hi"}},
		{name: "dir tree", files: []string{"d/a: A", "d/sub/b: B", "d/sub/deeper/c: C", "d/empty/"}, src: "d/", dest: "n",
			want: []string{"n/a: A", "n/empty/", "n/sub/b: B", "n/sub/deeper/c: C"}},
		{name: "empty dir", files: []string{"d/"}, src: "d", dest: "d", want: []string{"d/"}},
		{name: "symlinks kept as such", files: []string{"d/a: A", "d/l -> a", "d/out -> ../../etc/passwd"}, src: "d", dest: "d",
			want: []string{"d/a: A", "d/l -> a", "d/out -> ../../etc/passwd"}},
		{name: "symlink as src", files: []string{"l -> /etc/hosts"}, src: "l", dest: "x", want: []string{"x -> /etc/hosts"}},
		{name: "fifo skipped", files: []string{"d/a: A"}, src: "d", dest: "d", want: []string{"d/a: A"},
			warn: "warning: skipping \"DIR/d/p\": not a regular file, directory or symlink\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeTree(t, dir, tc.files...)
			if tc.warn != "" {
				if err := syscall.Mkfifo(filepath.Join(dir, "d/p"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			var buf, warn bytes.Buffer
			if err := makeTar(&buf, filepath.Join(dir, tc.src), tc.dest, &warn); err != nil {
				t.Fatal(err)
			}
			if got := readTar(t, &buf); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("entries %q, want %q", got, tc.want)
			}
			if got := strings.ReplaceAll(warn.String(), dir, "DIR"); got != tc.warn {
				t.Errorf("warnings %q, want %q", got, tc.warn)
			}
		})
	}
}

func TestMakeTarModes(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "run.sh")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := makeTar(&buf, p, "run.sh", io.Discard); err != nil {
		t.Fatal(err)
	}
	if got, want := readTar(t, &buf), []string{"run.sh: #!/bin/sh\n (755)"}; !reflect.DeepEqual(got, want) {
		t.Errorf("entries %q, want %q", got, want)
	}
}

func TestMakeTarMissing(t *testing.T) {
	err := makeTar(io.Discard, filepath.Join(t.TempDir(), "nope"), "x", io.Discard)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("makeTar of a missing file: %v, want not exist", err)
	}
}

func TestUntar(t *testing.T) {
	reg := func(name, body string) tarEntry { return tarEntry{name: name, typ: tar.TypeReg, body: body} }
	dir := func(name string) tarEntry { return tarEntry{name: name, typ: tar.TypeDir, mode: 0o755} }
	sym := func(name, link string) tarEntry { return tarEntry{name: name, typ: tar.TypeSymlink, link: link} }
	for _, tc := range []struct {
		name         string
		files        []string // below the temp dir, before
		prefix, dest string   // dest below the temp dir
		entries      []tarEntry
		want         []string // the temp dir after
		warn, err    string
	}{
		{name: "file to a new path", prefix: "etc/hosts", dest: "out/h", entries: []tarEntry{reg("etc/hosts", "H")},
			want: []string{"out/", "out/h: H"}},
		{name: "file over a file", files: []string{"h: old"}, prefix: "etc/hosts", dest: "h", entries: []tarEntry{reg("etc/hosts", "H")},
			want: []string{"h: H"}},
		{name: "file keeps its mode", prefix: "bin/run", dest: "run", entries: []tarEntry{{name: "bin/run", typ: tar.TypeReg, body: "R", mode: 0o755}},
			want: []string{"run: R (755)"}},
		{name: "file onto an existing dir", files: []string{"d/"}, prefix: "etc/hosts", dest: "d", entries: []tarEntry{reg("etc/hosts", "H")},
			want: []string{"d/"}, err: "cannot write DIR/d: is a directory"},
		{name: "dir tree to a new dir", prefix: "etc/nginx", dest: "n",
			entries: []tarEntry{dir("etc/nginx/"), reg("etc/nginx/a", "A"), dir("etc/nginx/sub/"), reg("etc/nginx/sub/b", "B")},
			want:    []string{"n/", "n/a: A", "n/sub/", "n/sub/b: B"}},
		{name: "nested dirs without entries of their own", prefix: "d", dest: "n", entries: []tarEntry{reg("d/x/y/z", "Z")},
			want: []string{"n/", "n/x/", "n/x/y/", "n/x/y/z: Z"}},
		{name: "dir into an existing dir: merged", files: []string{"n/old: O"}, prefix: "d", dest: "n",
			entries: []tarEntry{dir("d/"), reg("d/a", "A")}, want: []string{"n/", "n/a: A", "n/old: O"}},
		{name: "dir onto an existing file", files: []string{"n: F"}, prefix: "d", dest: "n", entries: []tarEntry{dir("d/"), reg("d/a", "A")},
			want: []string{"n: F"}, err: "cannot write DIR/n: DIR/n is not a directory"},
		{name: "relative src, whole tree", prefix: "", dest: "n", entries: []tarEntry{dir("./"), reg("./a", "A")},
			want: []string{"n/", "n/a: A"}},
		{name: "symlinks that stay inside", prefix: "d", dest: "n",
			entries: []tarEntry{reg("d/a", "A"), sym("d/l", "a"), sym("d/sub/up", "../a"), sym("d/sub/dot", "./x/y"), sym("d/top", ".")},
			want:    []string{"n/", "n/a: A", "n/l -> a", "n/sub/", "n/sub/dot -> ./x/y", "n/sub/up -> ../a", "n/top -> ."}},
		{name: "symlinks that could escape", prefix: "d", dest: "n",
			entries: []tarEntry{sym("d/up", "../x"), sym("d/abs", "/etc/passwd"), sym("d/sub/mid", "a/../../x"), sym("d/sub/far", "../../x"), sym("d/empty", "")},
			warn: `warning: skipping symlink: "DIR/n/up" -> "../x"` + "\n" + `warning: skipping symlink: "DIR/n/abs" -> "/etc/passwd"` + "\n" +
				`warning: skipping symlink: "DIR/n/sub/mid" -> "a/../../x"` + "\n" + `warning: skipping symlink: "DIR/n/sub/far" -> "../../x"` + "\n" +
				`warning: skipping symlink: "DIR/n/empty" -> ""` + "\n"},
		{name: "symlink as the whole copy", prefix: "etc/localtime", dest: "lt", entries: []tarEntry{sym("etc/localtime", "../usr/share/zoneinfo/UTC")},
			warn: `warning: skipping symlink: "DIR/lt" -> "../usr/share/zoneinfo/UTC"` + "\n"},
		{name: "dot-dot entries", prefix: "d", dest: "a/n", entries: []tarEntry{reg("d/../../evil", "E"), reg("d/a/../../../evil", "E"), reg("d/ok", "K")},
			want: []string{"a/", "a/n/", "a/n/ok: K"},
			warn: `warning: file "DIR/evil" is outside target destination, skipping` + "\n" +
				`warning: file "DIR/evil" is outside target destination, skipping` + "\n"},
		{name: "dot-dot entries, empty prefix", prefix: "", dest: "a/n", entries: []tarEntry{reg("../evil", "E")},
			warn: `warning: file "DIR/a/evil" is outside target destination, skipping` + "\n"},
		{name: "absolute entries, empty prefix", prefix: "", dest: "n", entries: []tarEntry{reg("/etc/evil", "E"), reg("ok", "K")},
			want: []string{"n/", "n/ok: K"}, warn: `warning: file "DIR/n/etc/evil" is outside target destination, skipping` + "\n"},
		{name: "absolute entry outside the prefix", prefix: "etc/hosts", dest: "h", entries: []tarEntry{reg("/etc/hosts", "E")},
			err: "tar contents corrupted"},
		{name: "entry beside the prefix", prefix: "d", dest: "n", entries: []tarEntry{reg("d/a", "A"), reg("dx/b", "B")},
			want: []string{"n/", "n/a: A"}, err: "tar contents corrupted"},
		{name: "no write through a symlink in dest", files: []string{"outside/", "n/link -> ../outside"}, prefix: "d", dest: "n",
			entries: []tarEntry{reg("d/link/f", "F"), reg("d/link/sub/g", "G")},
			want:    []string{"n/", "n/link -> ../outside", "outside/"},
			warn: `warning: skipping "DIR/n/link/f": "DIR/n/link" is a symlink` + "\n" +
				`warning: skipping "DIR/n/link/sub/g": "DIR/n/link" is a symlink` + "\n"},
		{name: "a symlink in dest is replaced, not followed", files: []string{"secret: S", "n/f -> ../secret"}, prefix: "d", dest: "n",
			entries: []tarEntry{reg("d/f", "F")}, want: []string{"n/", "n/f: F", "secret: S"}},
		{name: "dest given as a symlink is followed", files: []string{"real/", "n -> real"}, prefix: "d", dest: "n",
			entries: []tarEntry{reg("d/a", "A")}, want: []string{"n -> real", "real/", "real/a: A"}},
		{name: "hard links and devices skipped", prefix: "d", dest: "n",
			entries: []tarEntry{reg("d/a", "A"), {name: "d/h", typ: tar.TypeLink, link: "d/a"}, {name: "d/c", typ: tar.TypeChar}},
			want:    []string{"n/", "n/a: A"},
			warn: `warning: skipping "DIR/n/h": not a regular file, directory or symlink` + "\n" +
				`warning: skipping "DIR/n/c": not a regular file, directory or symlink` + "\n"},
		{name: "empty stream writes nothing", prefix: "d", dest: "deep/n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			writeTree(t, root, tc.files...)
			var warn bytes.Buffer
			err := untar(bytes.NewReader(buildTar(t, tc.entries)), tc.prefix, filepath.Join(root, tc.dest), &warn)
			gotErr := ""
			if err != nil {
				gotErr = strings.ReplaceAll(err.Error(), root, "DIR")
			}
			if gotErr != tc.err {
				t.Errorf("error %q, want %q", gotErr, tc.err)
			}
			if got := tree(t, root); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("tree %q, want %q", got, tc.want)
			}
			if got := strings.ReplaceAll(warn.String(), root, "DIR"); got != tc.warn {
				t.Errorf("warnings %q, want %q", got, tc.warn)
			}
		})
	}
}

func TestLinkStaysInside(t *testing.T) {
	for _, tc := range []struct {
		rel, link string
		want      bool
	}{
		{"l", "a", true},
		{"l", "./a/b", true},
		{"l", ".", true},
		{"l", "..", false},
		{"l", "../l", false},
		{"a/l", "..", true},
		{"a/l", "../b", true},
		{"a/l", "../../b", false},
		{"a/b/l", "../../c/d", true},
		{"a/b/l", "c/../d", false},
		{"a/b/l", "../c/../../d", false},
		{"l", "/etc/passwd", false},
		{"l", "", false},
		{".", "a", false},
	} {
		if got := linkStaysInside(tc.rel, tc.link); got != tc.want {
			t.Errorf("linkStaysInside(%q, %q) = %v, want %v", tc.rel, tc.link, got, tc.want)
		}
	}
}
