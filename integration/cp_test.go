//go:build integration

package integration

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestCp copies files and directories into and out of a running busybox
// container with `podhost cp` and checks both sides directly: the host's
// files, and the container's through /proc/PID/root (and exec).
func TestCp(t *testing.T) {
	d := newPodhostd(t)
	d.start()
	d.writeManifest("web.yaml", sleeper("web", 1, ""))
	rootfs := fmt.Sprintf("/proc/%d/root", containerPID(t, d.waitRunning("web"), "main"))
	local := t.TempDir()
	blob := make([]byte, 300<<10) // several exec frames, every byte value
	for i := range blob {
		blob[i] = byte(i*7 + i>>10)
	}
	mustWrite(t, filepath.Join(local, "blob"), blob, 0o644)
	mustWrite(t, filepath.Join(local, "tree/run.sh"), []byte("#!/bin/sh\necho run\n"), 0o755)
	mustWrite(t, filepath.Join(local, "tree/sub/deep/b"), []byte("bee\n"), 0o644)
	if err := os.Symlink("sub/deep/b", filepath.Join(local, "tree/link")); err != nil {
		t.Fatal(err)
	}
	cp := func(t *testing.T, wantStderr string, args ...string) {
		t.Helper()
		stdout, stderr, code := d.cliSplit(append([]string{"cp"}, args...)...)
		if code != 0 || stdout != "" || stderr != wantStderr {
			t.Fatalf("podhost cp %q: exit %d, stdout %q, stderr %q; want 0, \"\", %q", args, code, stdout, stderr, wantStderr)
		}
	}

	t.Run("file in", func(t *testing.T) {
		cp(t, "", filepath.Join(local, "blob"), "web:/tmp/x")
		cp(t, "", filepath.Join(local, "blob"), "web:/tmp") // an existing dir: /tmp/blob
		for _, p := range []string{"/tmp/x", "/tmp/blob"} {
			if got, err := os.ReadFile(rootfs + p); err != nil || !bytes.Equal(got, blob) {
				t.Errorf("%s in the container: %d bytes, %v; want the %d bytes copied", p, len(got), err, len(blob))
			}
			if out, _, code := d.execCLI("", "web", "--", "cat", p); code != 0 || out != string(blob) {
				t.Errorf("exec cat %s: %d bytes (exit %d), want the %d bytes copied", p, len(out), code, len(blob))
			}
		}
		cp(t, "", "--no-preserve", filepath.Join(local, "blob"), "web:/tmp/np")
		if got, err := os.ReadFile(rootfs + "/tmp/np"); err != nil || !bytes.Equal(got, blob) {
			t.Errorf("--no-preserve copy: %d bytes, %v", len(got), err)
		}
	})

	t.Run("dir in", func(t *testing.T) {
		cp(t, "", filepath.Join(local, "tree"), "web:/tmp/t")
		if got, want := listTree(t, rootfs+"/tmp/t"), listTree(t, filepath.Join(local, "tree")); !reflect.DeepEqual(got, want) {
			t.Errorf("/tmp/t in the container:\n%q\nwant\n%q", got, want)
		}
		out, _, _ := d.execCLI("", "web", "--", "ls", "-lR", "/tmp/t")
		for _, want := range []string{"-rwxr-xr-x", "run.sh", "link -> sub/deep/b", "/tmp/t/sub/deep:"} {
			if !strings.Contains(out, want) {
				t.Errorf("ls -lR /tmp/t has no %q:\n%s", want, out)
			}
		}
		if out, _, code := d.execCLI("", "web", "--", "cat", "/tmp/t/link"); code != 0 || out != "bee\n" {
			t.Errorf("cat /tmp/t/link: %q (exit %d)", out, code)
		}
	})

	t.Run("out", func(t *testing.T) {
		mustWrite(t, rootfs+"/tmp/out/blob", blob, 0o600)
		mustWrite(t, rootfs+"/tmp/out/sub/c", []byte("sea\n"), 0o755)
		if err := os.Symlink("../blob", rootfs+"/tmp/out/sub/up"); err != nil {
			t.Fatal(err)
		}
		const removing = "tar: removing leading '/' from member names\n"
		cp(t, removing, "web:/tmp/out/blob", filepath.Join(local, "got"))
		if got, err := os.ReadFile(filepath.Join(local, "got")); err != nil || !bytes.Equal(got, blob) {
			t.Errorf("copied out: %d bytes, %v; want %d bytes", len(got), err, len(blob))
		}
		cp(t, removing, "default/web:/tmp/out/", filepath.Join(local, "gotdir"))
		if got, want := listTree(t, filepath.Join(local, "gotdir")), listTree(t, rootfs+"/tmp/out"); !reflect.DeepEqual(got, want) {
			t.Errorf("copied dir:\n%q\nwant\n%q", got, want)
		}
	})

	t.Run("errors", func(t *testing.T) {
		for _, tc := range []struct {
			args   []string
			stderr string
		}{
			{[]string{"web:/nope", filepath.Join(local, "nope")},
				"tar: /nope: No such file or directory\ntar: error exit delayed from previous errors\ncommand terminated with exit code 1\n"},
			{[]string{filepath.Join(local, "blob"), "nope:/tmp/x"}, "Error from server (NotFound): pods \"nope\" not found\n"},
			{[]string{"nope:/etc/hosts", filepath.Join(local, "nope")}, "Error from server (NotFound): pods \"nope\" not found\n"},
			{[]string{"web:/etc/hosts", "web:/tmp/hosts"},
				"Error: one of src or dest must be a local file specification\nSee 'podhost cp --help' for usage.\n"},
			{[]string{filepath.Join(local, "missing"), "web:/tmp/m"},
				"Error: " + filepath.Join(local, "missing") + " doesn't exist in local filesystem\n"},
		} {
			stdout, stderr, code := d.cliSplit(append([]string{"cp"}, tc.args...)...)
			if code != 1 || stdout != "" || stderr != tc.stderr {
				t.Errorf("podhost cp %q: exit %d, stdout %q, stderr %q; want 1, \"\", %q", tc.args, code, stdout, stderr, tc.stderr)
			}
		}
		if _, err := os.Lstat(filepath.Join(local, "nope")); err == nil {
			t.Error("a failed copy out of the pod created its destination")
		}
	})
}

func mustWrite(t *testing.T, p string, data []byte, perm fs.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, perm); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, perm); err != nil { // whatever the umask
		t.Fatal(err)
	}
}

// listTree is what is below dir: path → mode and content, or link target.
func listTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fi, err := e.Info()
		if err != nil {
			return err
		}
		switch {
		case e.IsDir():
			out[rel] = "dir"
		case fi.Mode()&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			out[rel] = "-> " + link
			return err
		default:
			b, err := os.ReadFile(p)
			out[rel] = fmt.Sprintf("%v %x", fi.Mode(), sha256.Sum256(b))
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
